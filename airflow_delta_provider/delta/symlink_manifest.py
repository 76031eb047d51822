"""Symlink format manifests: the files Presto, Trino, Athena and Redshift
Spectrum read a Delta table through, as delta-spark's ``GenerateSymlinkManifest``
writes them.

Layout: ``_symlink_format_manifest/<partition folder>/manifest`` per
partition (the folder is Hive's ``col=value/...``, each value escaped as in
delta-spark, null or empty as ``__HIVE_DEFAULT_PARTITION__``), or
``_symlink_format_manifest/manifest`` for an unpartitioned table. A manifest
lists the absolute, fully qualified, decoded paths of the partition's live
files (``file:/...`` locally, ``s3://...``), one per line; paths the log holds
as absolute URIs (a shallow clone's) are written as they are.

- :func:`generate` is ``GENERATE symlink_format_manifest``: every manifest of
  a snapshot, and those of partitions with no live file left are deleted. An
  unpartitioned table with no file gets an empty manifest; a partitioned one none.
- :func:`update_after_commit` is the post-commit hook of a table with
  ``delta.compatibility.symlinkFormatManifest.enabled=true``, after a commit
  that adds or removes files (delta-spark's condition): it rewrites the
  manifests of the partitions the commit touched, and deletes those left empty.

Manifests cannot express deletion vectors (rows hidden in a file) nor column
mapping (physical column names): both are refused, by generation and by
:func:`check_properties` when a commit would turn the property on beside them
or them on beside the property (delta-spark's
``assertTablePropertyConstraintsSatisfied``; delta-spark refuses column
mapping only when it generates, we refuse it up front too).

Staleness: delta-spark records nothing, and a failed hook leaves stale
manifests until a full GENERATE. Here every successful generation records
the version it reflects in ``_symlink_format_manifest/_last_generated.json``
(hidden: a leading ``_``, which Hive, Presto, Trino and Athena skip). The
hook updates incrementally only when that record is the version just before
the commit; otherwise (a failed or skipped update, another engine's commit, a
first commit) it regenerates every manifest from the latest snapshot. A
failed update thus repairs itself on the next commit. A commit that adds and
removes no file advances the record when it is the version just before, so
the next data commit stays incremental.

Concurrent updates: the hook of version v reads the record, then writes; a
faster hook of v+1 may finish in between. So after an incremental update the
hook lists the log once more, and when a newer version exists it regenerates
every manifest from the latest snapshot, which the v+1 hook may already have
written: the manifests then always end at the newest version. The record
never moves backwards in the hook (a newer one of the same table is kept).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Action, AddFile, Metadata, RemoveFile
from airflow_delta_provider.delta.errors import SymlinkManifestUnsupportedError
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.log.store import TableLog
from airflow_delta_provider.delta.partitions import partition_dir, to_absolute
from airflow_delta_provider.delta.table_features import column_mapping

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

log = logging.getLogger(__name__)

#: The mode of ``GENERATE`` this module implements.
MODE = "symlink_format_manifest"
OPERATION = "GENERATE"
MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
#: The version the manifests reflect (hidden from the engines that read them).
STATE_FILE = f"{MANIFEST_DIR}/_last_generated.json"


@dataclass(frozen=True)
class ManifestResult:
    """What a generation did: the version it reflects, the manifests written
    and deleted, and whether it rewrote them all."""

    version: int
    written: int
    deleted: int
    full: bool

    def metrics(self) -> dict[str, int]:
        return {"numManifestsWritten": self.written, "numManifestsDeleted": self.deleted}


# --- the property and what it cannot live with -----------------------------------


def check_properties(staged: Metadata, previous: Metadata | None, read_snapshot: Snapshot | None) -> None:
    """Refuse metadata that asks for manifests beside deletion vectors or
    column mapping (either turned on second), and turning manifests on for a
    table whose files carry deletion vectors; raises
    :class:`SymlinkManifestUnsupportedError`."""
    if not table_properties.symlink_manifest_enabled(staged):
        return
    key = table_properties.SYMLINK_FORMAT_MANIFEST
    if table_properties.deletion_vectors_enabled(staged):
        raise SymlinkManifestUnsupportedError(
            f"{key}=true and {table_properties.ENABLE_DELETION_VECTORS}=true cannot both be set: symlink "
            "manifests list whole files and cannot express rows that deletion vectors hide"
        )
    mode = column_mapping.mode_of(staged.configuration)
    if mode != column_mapping.NONE:
        raise SymlinkManifestUnsupportedError(
            f"{key}=true and {table_properties.COLUMN_MAPPING_MODE}={mode} cannot both be set: engines that "
            "read symlink manifests read columns by their names in the files, not by the mapping"
        )
    newly = previous is None or not table_properties.symlink_manifest_enabled(previous)
    if newly and read_snapshot is not None:
        _check_no_deletion_vectors(read_snapshot.files, f"{key}=true cannot be set")


def check_files(metadata: Metadata, files: Iterable[AddFile], what: str) -> None:
    """Refuse ``files`` with deletion vectors for a table whose ``metadata``
    asks for manifests (a commit's adds: a shallow clone's come with the
    source's vectors, whatever the clone's properties say); raises
    :class:`SymlinkManifestUnsupportedError`. ``what`` names the change."""
    if table_properties.symlink_manifest_enabled(metadata):
        _check_no_deletion_vectors(files, f"{what} with {table_properties.SYMLINK_FORMAT_MANIFEST}=true")


def _check_no_deletion_vectors(files: Iterable[AddFile], what: str) -> None:
    with_dv = next((f for f in files if f.deletion_vector is not None), None)
    if with_dv is not None:
        raise SymlinkManifestUnsupportedError(
            f"{what}: file {with_dv.path} (and maybe others) has a deletion vector, which symlink manifests "
            "cannot express; purge them first (REORG TABLE ... APPLY (PURGE))"
        )


def _check_generatable(metadata: Metadata, version: int, files: Iterable[AddFile]) -> None:
    mode = column_mapping.mode_of(metadata.configuration)
    if mode != column_mapping.NONE:
        raise SymlinkManifestUnsupportedError(
            f"symlink manifests of version {version} cannot be generated: the table uses column mapping "
            f"({table_properties.COLUMN_MAPPING_MODE}={mode}), which the engines that read them do not apply"
        )
    _check_no_deletion_vectors(files, f"symlink manifests of version {version} cannot be generated")


# --- generation ------------------------------------------------------------------


def generate(table: TableLog, snapshot: Snapshot) -> ManifestResult:
    """Write every manifest of ``snapshot`` and delete the others
    (``GENERATE symlink_format_manifest``); records the version."""
    files = snapshot.files
    _check_generatable(snapshot.metadata, snapshot.version, files)
    groups = _by_partition(snapshot.partition_columns, files)
    if not groups and not snapshot.partition_columns:
        groups = {"": []}  # delta-spark: an empty unpartitioned table has an empty manifest
    for folder, members in groups.items():
        _write_manifest(table, folder, members)
    stale = sorted(_existing_folders(table) - set(groups))
    for folder in stale:
        _delete_manifest(table, folder)
    _write_state(table, snapshot.version, snapshot.metadata)
    log.info("Symlink manifests of %s at version %d: %d written, %d deleted", table.root, snapshot.version,
             len(groups), len(stale))  # fmt: skip
    return ManifestResult(snapshot.version, len(groups), len(stale), full=True)


def update_after_commit(
    table: TableLog,
    version: int,
    actions: Sequence[Action] | None,
    metadata: Metadata,
    open_snapshot: Callable[[int | None], Snapshot],
    read_snapshot: Snapshot | None = None,
) -> ManifestResult | None:
    """The post-commit update after ``version`` (``actions``: what it
    committed, None when unknown; ``metadata``: the table's after it): None
    when the table does not ask for manifests or the commit changed no file.

    Incremental when the manifests reflect ``version - 1`` and the
    partition columns stay; else every manifest is regenerated from the
    latest snapshot (see the module's docstring). The touched partitions' files come from ``read_snapshot``
    and ``actions`` when it is ``version - 1`` with its files loaded, else
    from ``open_snapshot(version)``; ``open_snapshot(None)`` opens the latest."""
    if not table_properties.symlink_manifest_enabled(metadata):
        return None
    recorded = _read_state(table)
    if actions is not None and not any(isinstance(a, (AddFile, RemoveFile)) for a in actions):
        if recorded == (version - 1, metadata.id):  # the manifests still hold: say they reflect this version
            _write_state(table, version, metadata, forward_only=True)
        return None
    if recorded is not None and recorded[1] == metadata.id and recorded[0] >= version:
        return None  # a later commit's update got there first
    touched = _touched_folders(metadata, actions)
    before = read_snapshot.metadata.partition_columns if read_snapshot is not None else None
    repartitioned = before != metadata.partition_columns  # the old folders are not the new ones
    if recorded != (version - 1, metadata.id) or touched is None or actions is None or repartitioned:
        return generate(table, open_snapshot(None))
    columns = metadata.partition_columns
    if read_snapshot is not None and read_snapshot.version == version - 1 and read_snapshot.files_loaded:
        files = _files_after(table.root, read_snapshot.files, actions, columns, touched)
    else:
        files = [
            f
            for f in open_snapshot(version).files
            if not columns or partition_dir(columns, f.partition_values) in touched
        ]
    _check_generatable(metadata, version, files)
    groups = _by_partition(columns, files) if columns else {"": files}
    for folder, members in groups.items():
        _write_manifest(table, folder, members)
    emptied = sorted(touched - set(groups))
    for folder in emptied:
        _delete_manifest(table, folder)
    _write_state(table, version, metadata, forward_only=True)
    if _newer_commit_exists(table, version):  # its hook may have finished first: end at the newest version
        log.info("Symlink manifests of %s: a commit after %d appeared during the update; regenerating them all",
                 table.root, version)  # fmt: skip
        return generate(table, open_snapshot(None))
    return ManifestResult(version, len(groups), len(emptied), full=False)


def _newer_commit_exists(table: TableLog, version: int) -> bool:
    """Whether the log holds a commit after ``version`` (one listing)."""
    return any(f.kind == "commit" for f in table.log_store.list_from(version + 1))


def _touched_folders(metadata: Metadata, actions: Sequence[Action] | None) -> set[str] | None:
    """The partition folders whose files the commit added or removed (empty
    for an unpartitioned table); None when that is unknown."""
    if actions is None:
        return None
    if not metadata.partition_columns:
        return set()
    touched: set[str] = set()
    for a in actions:
        if isinstance(a, (AddFile, RemoveFile)):
            if a.partition_values is None:  # a remove without its values: ask the full generation
                return None
            touched.add(partition_dir(metadata.partition_columns, a.partition_values))
    return touched


def _files_after(
    root: str, before: Iterable[AddFile], actions: Sequence[Action], columns: Sequence[str], touched: set[str]
) -> list[AddFile]:
    """The live files of the ``touched`` partitions (all, unpartitioned) once
    ``actions`` apply to the files ``before`` them."""
    canonical = PathCanonicalizer(root)
    added = [a for a in actions if isinstance(a, AddFile)]
    gone = {canonical(a.path) for a in actions if isinstance(a, (AddFile, RemoveFile))}
    kept = [
        f
        for f in before
        if (not columns or partition_dir(columns, f.partition_values) in touched) and canonical(f.path) not in gone
    ]
    return kept + added


# --- files ---------------------------------------------------------------------------


def _by_partition(columns: Sequence[str], files: Iterable[AddFile]) -> dict[str, list[AddFile]]:
    groups: dict[str, list[AddFile]] = {}
    for f in files:
        groups.setdefault(partition_dir(columns, f.partition_values), []).append(f)
    return groups


def manifest_path(folder: str) -> str:
    """The manifest of partition ``folder`` (``""``: the table's only one), under the root."""
    return f"{MANIFEST_DIR}/{folder}/{MANIFEST_NAME}" if folder else f"{MANIFEST_DIR}/{MANIFEST_NAME}"


def manifest_line(table_root: str, add_path: str) -> str:
    """The absolute, decoded, fully qualified location of a data file, as a
    manifest lists it (Hadoop's ``Path.toString``: ``file:/x`` locally)."""
    location = to_absolute(table_root, add_path)
    return f"file:{location}" if location.startswith("/") else location


def _write_manifest(table: TableLog, folder: str, files: Iterable[AddFile]) -> None:
    lines = sorted(manifest_line(table.root, f.path) for f in files)
    table.log_store.storage.put(manifest_path(folder), "".join(f"{line}\n" for line in lines).encode("utf-8"))


def _delete_manifest(table: TableLog, folder: str) -> None:
    storage = table.log_store.storage
    storage.delete(manifest_path(folder))
    parts = folder.split("/")
    for depth in range(len(parts), 0, -1):  # local folders left empty (object stores have none)
        if not storage.delete_empty_dir(f"{MANIFEST_DIR}/{'/'.join(parts[:depth])}"):
            break


def _hidden(name: str) -> bool:
    """Hadoop's hidden names (``InMemoryFileIndex``): a ``.``, or a ``_`` in a name that is not ``col=value``."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def _existing_folders(table: TableLog) -> set[str]:
    """The partition folders that hold a manifest now."""
    out: set[str] = set()
    for meta in table.log_store.storage.list_tree(MANIFEST_DIR):
        rel = meta.path[len(MANIFEST_DIR) + 1 :] if meta.path.startswith(MANIFEST_DIR + "/") else None
        if meta.is_dir or rel is None or meta.name != MANIFEST_NAME:
            continue
        folder = rel[: -len(MANIFEST_NAME)].rstrip("/")
        if not any(_hidden(part) for part in folder.split("/") if part):
            out.add(folder)
    return out


# --- the record of the version the manifests reflect ---------------------------------


def _read_state(table: TableLog) -> tuple[int, str] | None:
    """(version, table id) of the last generation; None when absent or unreadable."""
    storage = table.log_store.storage
    try:
        if not storage.exists(STATE_FILE):
            return None
        state = json.loads(storage.get(STATE_FILE))
        return int(state["version"]), str(state["tableId"])
    except (ValueError, KeyError, TypeError):
        return None


def _write_state(table: TableLog, version: int, metadata: Metadata, *, forward_only: bool = False) -> None:
    """Record ``version``; with ``forward_only`` (the hook) not when a newer
    version of the same table is recorded already."""
    if forward_only:
        recorded = _read_state(table)
        if recorded is not None and recorded[1] == metadata.id and recorded[0] > version:
            return
    state = {"version": version, "tableId": metadata.id}
    table.log_store.storage.put(STATE_FILE, json.dumps(state).encode("utf-8"))


__all__ = [
    "MANIFEST_DIR",
    "MODE",
    "OPERATION",
    "STATE_FILE",
    "ManifestResult",
    "check_files",
    "check_properties",
    "generate",
    "manifest_line",
    "manifest_path",
    "update_after_commit",
]
