"""VACUUM planning: which files and folders under a table root may be deleted.

Planning is pure: it takes the snapshot's file actions, a listing of the
table folder and the clock, and returns a plan. Nothing here deletes, so the
rules can be tested without Spark or real waiting. The rules are delta-spark's
``VacuumCommand`` (notes section 8):

- a file is deleted when its mtime is older than ``now - retention``, it is not
  referenced by a live ``add`` and not by a tombstone deleted at or after
  ``now - retention``; the deletion vector files (``[<prefix>/]deletion_vector_<uuid>.bin``,
  or an absolute ``p`` path under the root) of those actions are kept the
  same way, and unreferenced ones go like any other file;
- names starting with ``_`` or ``.`` are hidden and never touched (nor is
  anything below them), except ``_change_data``, ``_delta_index`` and
  partition folders ``<partition column>=...``
  (``DeltaTableUtils.isHiddenDirectory``); ``_delta_log`` is always hidden;
- one exception of our own: a writer's staging folder
  ``_delta_staging_<uuid>/`` at the table root (left behind when the driver
  dies mid-write) goes as a whole, every file inside it hidden or not, once
  it and everything in it is older than ``now - retention``; one young entry
  (a write may be in progress) or a file the log references keeps all of it;
- a folder is deleted when nothing would be left in it and no live file or
  kept tombstone lives below it;
- nothing outside the table root is ever planned.

Retention defaults to ``delta.deletedFileRetentionDuration``. A shorter one is
refused while the retention check is on, as delta-spark's
``spark.databricks.delta.retentionDurationCheck.enabled`` does.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from airflow_delta_provider.delta.actions.deletion_vectors import dv_location
from airflow_delta_provider.delta.actions.model import AddFile, RemoveFile
from airflow_delta_provider.delta.errors import InvalidInputError, RetentionTooShortError
from airflow_delta_provider.delta.partitions import relative_to_root
from airflow_delta_provider.delta.storage import ObjectMeta, TableStorage, parse_location
from airflow_delta_provider.delta.storage.hidden_paths import (
    LOG_DIR,
    is_hidden_name,
    is_hidden_path,
    is_staging_name,
)

_MS_PER_HOUR = 3_600_000


@dataclass(frozen=True)
class ListedEntry:
    """One entry of the table folder listing.

    ``path`` is relative to the table root, ``/``-separated and decoded (the
    name on storage, not the URI-encoded form of the log).
    """

    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False


@dataclass(frozen=True)
class VacuumPlan:
    """What a VACUUM would delete. Paths are relative to the table root."""

    delete_before_ms: int
    retention_ms: int
    files: list[ListedEntry] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # deepest first
    #: The folders VACUUM looked in: the root and every folder listed that is not hidden
    #: (delta-spark's ``numVacuumedDirectories``).
    searched_dirs: int = 1

    @property
    def size_in_bytes(self) -> int:
        return sum(f.size for f in self.files)


# --- retention ----------------------------------------------------------------


def check_retention(retention_hours: float | None, configured_ms: int, enforce: bool = True) -> int:
    """The retention in ms that VACUUM will use.

    ``None`` means the table's configured retention. A value below the
    configured one is refused unless ``enforce`` is False (delta-spark's
    ``checkRetentionPeriodSafety``); a negative one never reaches here (the
    spec's ``validate()`` refuses it).
    """
    if retention_hours is None:
        return configured_ms
    retention_ms = int(retention_hours * _MS_PER_HOUR)
    if enforce and retention_ms < configured_ms:
        configured_hours = configured_ms / _MS_PER_HOUR
        raise RetentionTooShortError(
            f"retention of {retention_hours:g} hours is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({configured_hours:g} hours). Files that "
            "concurrent or lagging readers and writers still need could be deleted. If no "
            "operation is running on this table, turn the retention check off "
            "(--no-retention-check); otherwise use at least "
            f"{configured_hours:g} hours"
        )
    return retention_ms


def relative_path(log_path: str, table_root: str) -> str | None:
    """The decoded path relative to the root of a path as the log spells it;
    None for a path outside the table root, which VACUUM never touches
    (:func:`~airflow_delta_provider.delta.partitions.relative_to_root`)."""
    return relative_to_root(table_root, log_path)


def referenced_paths(action: AddFile | RemoveFile, table_root: str) -> Iterable[str]:
    """The relative paths of the data file and of the deletion vector file an
    action refers to (those outside the root are never touched, so not listed)."""
    rel = relative_path(action.path, table_root)
    if rel is not None:
        yield rel
    location = dv_location(action.deletion_vector, table_root) if action.deletion_vector else None
    if location is not None:  # None: no DV, or an inline one
        rel = relative_path(location, table_root)
        if rel is not None:
            yield rel


def kept_paths(
    table_root: str, adds: Iterable[AddFile], tombstones: Iterable[RemoveFile], delete_before: int
) -> set[str]:
    """The relative paths VACUUM must keep: those of the live files and of the
    tombstones deleted at or after ``delete_before`` (with their DV files)."""
    valid: set[str] = set()
    for add in adds:
        valid.update(referenced_paths(add, table_root))
    for tomb in tombstones:
        if (tomb.deletion_timestamp or 0) >= delete_before:
            valid.update(referenced_paths(tomb, table_root))
    return valid


# --- planning -----------------------------------------------------------------


def plan_vacuum(
    *,
    table_root: str,
    listing: Iterable[ListedEntry],
    adds: Iterable[AddFile],
    tombstones: Iterable[RemoveFile],
    partition_columns: Sequence[str],
    now_ms: int,
    retention_ms: int,
) -> VacuumPlan:
    """The files and empty folders VACUUM may delete.

    ``listing`` is every entry under the root (hidden ones may be included:
    they block their folder from being deleted and are never planned
    themselves, staging folders aside). ``adds`` are the live files,
    ``tombstones`` the snapshot's removes.
    """
    if retention_ms < 0:
        raise RetentionTooShortError(f"retention must not be negative, got {retention_ms} ms")
    delete_before = now_ms - retention_ms

    valid = kept_paths(table_root, adds, tombstones, delete_before)
    # A folder holding a kept file must stay.
    protected_dirs = {parent for rel in valid for parent in _parents(rel)}

    entries = [n for n in (_normalized(e) for e in listing) if n is not None]

    files: list[ListedEntry] = []
    deleted: set[str] = set()
    for e in entries:
        if e.is_dir or is_hidden_path(e.path, partition_columns):
            continue
        if e.path in valid or e.mtime_ms >= delete_before:
            continue
        files.append(e)
        deleted.add(e.path)

    # A folder goes when every entry inside it goes. Visit deepest first so a
    # folder emptied of empty folders goes too.
    children: dict[str, list[ListedEntry]] = {}
    for e in entries:
        parent = posixpath.dirname(e.path)
        children.setdefault(parent, []).append(e)
    dirs: list[str] = []
    candidates = [
        e
        for e in entries
        if e.is_dir and e.path not in protected_dirs and not is_hidden_path(e.path, partition_columns)
    ]
    for d in sorted(candidates, key=lambda e: e.path.count("/"), reverse=True):
        inside = children.get(d.path, [])
        if not all(c.path in deleted for c in inside):
            continue
        if not inside and d.mtime_ms >= delete_before:
            continue  # a fresh empty folder may be a writer's, about to be filled
        dirs.append(d.path)
        deleted.add(d.path)

    staged_files, staged_dirs = _plan_staging(entries, protected_dirs, partition_columns, delete_before)
    files.extend(staged_files)
    dirs.extend(staged_dirs)
    dirs.sort(key=lambda p: p.count("/"), reverse=True)  # stable: each folder after its children

    files.sort(key=lambda e: e.path)
    searched = 1 + sum(1 for e in entries if e.is_dir and not is_hidden_path(e.path, partition_columns))
    return VacuumPlan(
        delete_before_ms=delete_before, retention_ms=retention_ms, files=files, dirs=dirs, searched_dirs=searched
    )


def _plan_staging(
    entries: list[ListedEntry], protected_dirs: set[str], partition_columns: Sequence[str], delete_before: int
) -> tuple[list[ListedEntry], list[str]]:
    """Files and folders of abandoned root-level staging folders, each taken whole or not at all."""
    folders = {
        e.path: e for e in entries if e.is_dir and "/" not in e.path and is_staging_name(e.path, partition_columns)
    }
    inside: dict[str, list[ListedEntry]] = {name: [] for name in folders}
    for e in entries:
        top, sep, _ = e.path.partition("/")
        if sep and top in inside:
            inside[top].append(e)
    files: list[ListedEntry] = []
    dirs: list[str] = []
    for name, folder in folders.items():
        members = inside[name]
        if folder.mtime_ms >= delete_before or any(m.mtime_ms >= delete_before for m in members):
            continue  # may be a write in progress
        if name in protected_dirs:
            continue  # the log references a file in it: never so for a real one, but keep it whole
        files.extend(m for m in members if not m.is_dir)
        sub = sorted((m.path for m in members if m.is_dir), key=lambda p: p.count("/"), reverse=True)
        dirs.extend([*sub, name])
    return files, dirs


def _parents(rel: str) -> Iterable[str]:
    parent = posixpath.dirname(rel)
    while parent:
        yield parent
        parent = posixpath.dirname(parent)


def _normalized(e: ListedEntry) -> ListedEntry | None:
    """The entry with a clean relative path; None for anything outside the root."""
    path = posixpath.normpath(e.path.replace(os.sep, "/")) if e.path else ""
    if not path or path == "." or path.startswith("/") or path == ".." or path.startswith("../"):
        return None
    if path.split("/", 1)[0] == LOG_DIR:
        return None
    return e if path == e.path else ListedEntry(path, e.size, e.mtime_ms, e.is_dir)


# --- listing ------------------------------------------------------------------


def list_table(storage: TableStorage, partition_columns: Sequence[str] = ()) -> list[ListedEntry]:
    """Every entry under the table root, without descending into hidden folders.

    One delimiter listing of the root, then one recursive listing by prefix
    of each visible folder (no per-folder calls on object stores). Hidden
    root entries themselves are listed (they keep nothing alive, but show
    the root is not empty) and their content is not: ``_delta_log`` alone can
    hold many thousand files. Root-level staging folders are the exception:
    all their content is listed, hidden names included, so VACUUM can judge
    and reclaim them.
    """
    dirs, files = storage.list_top("")
    out = [_entry(f) for f in files]
    for d in dirs:
        out.append(_entry(d))
        if is_staging_name(d.name, partition_columns):
            out.extend(_entry(m) for m in storage.list_tree(d.path))
        elif not is_hidden_name(d.name, partition_columns):
            # A hidden folder deeper down is listed, its content is not.
            out.extend(
                _entry(m)
                for m in storage.list_tree(d.path)
                if not is_hidden_path(m.path.rsplit("/", 1)[0], partition_columns)
            )
    return out


def _entry(meta: ObjectMeta) -> ListedEntry:
    return ListedEntry(meta.path, 0 if meta.is_dir else meta.size, meta.mtime_ms, meta.is_dir)


def checked_relative(rel_path: str) -> str:
    """A planned entry's path, checked to be a data path under the root."""
    rel = posixpath.normpath(rel_path)
    if rel.startswith("/") or rel == ".." or rel.startswith("../") or rel.split("/", 1)[0] == LOG_DIR:
        raise InvalidInputError(f"refusing to delete {rel_path!r}: not a data path under the table root")
    return rel


def absolute_path(table_root: str, rel_path: str) -> str:
    """The location (path or URI) of a planned entry, checked to lie under the root."""
    return parse_location(table_root).child(checked_relative(rel_path))


__all__ = [
    "ListedEntry",
    "VacuumPlan",
    "absolute_path",
    "check_retention",
    "checked_relative",
    "kept_paths",
    "list_table",
    "plan_vacuum",
    "referenced_paths",
    "relative_path",
]
