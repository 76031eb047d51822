"""The change data feed of a version range, as the files that hold it.

PROTOCOL.md "Change Data Files" and delta-spark's ``CDCReader``: the changes
of one commit are

- the rows of its ``cdc`` files, whose ``_change_type`` column says what each
  row is (``update_preimage``, ``update_postimage``, ``delete``, ``insert``),
  when the commit has any;
- otherwise, the rows of the files it adds with ``dataChange`` (inserts) and
  of those it removes with ``dataChange`` (deletes), as their deletion
  vectors left them. A whole-file DELETE and an APPEND record their changes
  this way, writing no ``cdc`` file. A file removed and re-added under
  another deletion vector changed only the rows one vector hides and the
  other does not (delta-spark's DELETE with deletion vectors, a RESTORE).

Commits that change no data (OPTIMIZE, a checkpoint, a property change) add
nothing. Every changed row also carries its commit's version and timestamp
(the in-commit timestamp where those are on).

Changes can only be read while the log holds every commit of the range, and
only for versions committed while ``delta.enableChangeDataFeed`` was on:
anything else is a :class:`ChangeDataUnavailableError` that says which
version is missing and why.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Action, AddCDCFile, AddFile, Metadata, RemoveFile, parse_commit
from airflow_delta_provider.delta.errors import ChangeDataUnavailableError, InvalidInputError
from airflow_delta_provider.delta.table_features.change_data_feed import DELETE, INSERT

if TYPE_CHECKING:
    from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable

#: The file a run writing changes to a folder leaves there with its result
#: (a name readers of the folder skip).
SUMMARY_FILE = "_delta_changes.json"


@dataclass(frozen=True)
class ChangeFile:
    """One file holding changed rows of one commit.

    ``file`` is given as an ``add`` so that a scan can read it: a ``cdc``
    file, or an added or removed data file with the deletion vector it had.
    ``change_type`` is None for a ``cdc`` file (its rows carry their own)."""

    version: int
    timestamp_ms: int
    change_type: str | None
    file: AddFile

    @property
    def is_change_data(self) -> bool:
        return self.change_type is None


@dataclass(frozen=True)
class ChangeRange:
    """The changes of versions ``start`` to ``end``, read against ``snapshot``
    (the table at ``end``, whose schema the rows take)."""

    start: int
    end: int
    files: list[ChangeFile]
    snapshot: Snapshot

    def file_counts(self) -> dict[str, int]:
        """How many files of each kind (``cdc``, ``insert``, ``delete``) hold the changes."""
        return dict(Counter("cdc" if f.is_change_data else str(f.change_type) for f in self.files))


def changes_between(table: DeltaTable, start: int, end: int | None = None) -> ChangeRange:
    """The files holding the changes of versions ``start`` to ``end``
    (inclusive; default: the latest version)."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidInputError(f"the start version must be a non-negative integer, not {start!r}")
    latest = table.latest_version()
    if start > latest:
        raise ChangeDataUnavailableError(f"start version {start} is after the latest version {latest} of {table.uri}")
    if end is None:
        end = latest
    if isinstance(end, bool) or not isinstance(end, int):
        raise InvalidInputError(f"the end version must be an integer, not {end!r}")
    if end < start:
        raise InvalidInputError(f"the end version {end} is before the start version {start}")
    if end > latest:
        raise ChangeDataUnavailableError(f"end version {end} is after the latest version {latest} of {table.uri}")
    commits = {f.version: f for f in table.log_store.list_from(start) if f.kind == "commit" and f.version <= end}
    missing = [v for v in range(start, end + 1) if v not in commits]
    if missing:
        kept = min(commits) if commits else None
        since = f"the earliest commit kept is {kept}" if kept is not None else "no commit of the range is kept"
        raise ChangeDataUnavailableError(
            f"version {missing[0]} of {table.uri} is no longer in the log ({since}; log cleanup removed "
            f"older ones): changes from version {start} cannot be read"
        )
    timestamps = dict(table.commit_timestamps())
    metadata = table.snapshot(version=start).metadata
    snapshot = table.snapshot(version=end)
    from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader

    files: list[ChangeFile] = []
    vectors = DeletionVectorReader(table.log_store.storage)
    for version in range(start, end + 1):
        actions = list(parse_commit(table.log_store.read(commits[version].name)))
        metadata = next((a for a in actions if isinstance(a, Metadata)), metadata)
        _check_recorded(table, version, metadata)
        files.extend(_commit_changes(version, timestamps[version], actions, vectors))
    return ChangeRange(start, end, files, snapshot)


def _check_recorded(table: DeltaTable, version: int, metadata: Metadata) -> None:
    if not table_properties.change_data_feed_enabled(metadata):
        raise ChangeDataUnavailableError(
            f"change data was not recorded for version {version} of {table.uri}: "
            f"{table_properties.ENABLE_CHANGE_DATA_FEED} was not true then; read changes from a later version"
        )


def _commit_changes(
    version: int, timestamp_ms: int, actions: list[Action], vectors: DeletionVectorReader
) -> list[ChangeFile]:
    cdc = [a for a in actions if isinstance(a, AddCDCFile)]
    if cdc:
        return [ChangeFile(version, timestamp_ms, None, a.as_add()) for a in cdc]
    added = {a.path: a for a in actions if isinstance(a, AddFile) and a.data_change}
    removed = {a.path: a for a in actions if isinstance(a, RemoveFile) and a.data_change}
    out = []
    for a in actions:
        if isinstance(a, AddFile) and a.data_change and a.path not in removed:
            out.append(ChangeFile(version, timestamp_ms, INSERT, a))
        elif isinstance(a, RemoveFile) and a.data_change and a.path not in added:
            out.append(ChangeFile(version, timestamp_ms, DELETE, _removed_as_add(version, a)))
    for path in sorted(added.keys() & removed.keys()):
        out += _vector_changes(version, timestamp_ms, removed[path], added[path], vectors)
    return out


def _vector_changes(
    version: int, timestamp_ms: int, remove: RemoveFile, add: AddFile, vectors: DeletionVectorReader
) -> list[ChangeFile]:
    """A file removed and re-added under another deletion vector, with no
    ``cdc`` file (delta-spark's DELETE with deletion vectors, a RESTORE): its
    deleted rows are those the new vector hides and the old one did not, its
    inserted rows the reverse, as delta-spark diffs the two. Each set is read
    as the file under an inline vector hiding every other row."""
    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector

    rows = add.num_records
    if rows is None:
        raise ChangeDataUnavailableError(
            f"version {version} re-adds {add.path} under another deletion vector, without change data files "
            "or a numRecords statistic: the rows the vectors changed cannot be read"
        )
    before = vectors.read(remove.deletion_vector, remove.path) if remove.deletion_vector else BitMap64()
    after = vectors.read(add.deletion_vector, add.path) if add.deletion_vector else BitMap64()
    out = []
    for change_type, changed in ((DELETE, after - before), (INSERT, before - after)):
        if changed:
            hidden = BitMap64()
            hidden.add_range(0, rows)
            file = replace(add, deletion_vector=inline_vector(hidden - changed))
            out.append(ChangeFile(version, timestamp_ms, change_type, file))
    return out


def _removed_as_add(version: int, remove: RemoveFile) -> AddFile:
    """A removed file as the ``add`` it was (its partition values and deletion vector)."""
    if remove.partition_values is None:
        raise ChangeDataUnavailableError(
            f"version {version} removes {remove.path} without its partition values (an old writer's "
            "tombstone): its deleted rows cannot be read"
        )
    return remove.as_add()


def read_summary(output: str, storage_options: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The result a run left in the folder ``output`` (:data:`SUMMARY_FILE`); None when there is none."""
    from airflow_delta_provider.delta.storage import open_storage

    try:
        return json.loads(open_storage(output, storage_options).get(SUMMARY_FILE))
    except (FileNotFoundError, ValueError):
        return None


__all__ = [
    "SUMMARY_FILE",
    "ChangeFile",
    "ChangeRange",
    "changes_between",
    "read_summary",
]
