"""RESTORE: make an earlier version the table's state again, as one new commit.

Follows delta-spark's ``RestoreTableCommand``:

1. the latest snapshot and the snapshot to restore (by version, or the newest
   commit at or before a timestamp);
2. files live in the old version but not now are re-added (``dataChange``
   true), files live now but not then are removed; a file is the pair (path,
   deletion vector), so a file whose vector changed is swapped for its old one;
3. every file to re-add, and its deletion vector file, must still exist: if
   VACUUM (or anyone) deleted one, the error names them and nothing is
   committed;
4. one commit: the adds and removes, the old version's metadata (schema,
   properties), and the union of both versions' protocols (never a
   downgrade: time travel to versions in between must keep working), with
   delta-spark's metrics. Whether files may be removed is judged by the table
   as it is now (``delta.appendOnly``), as delta-spark does.

No data file is read or written, so RESTORE needs no Spark. Like every
command that reads the whole table, it conflicts with any concurrent commit
that changes files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow_delta_provider.delta.actions.deletion_vectors import relative_dv_path
from airflow_delta_provider.delta.actions.model import AddFile, Metadata, RemoveFile
from airflow_delta_provider.delta.errors import DataFilesMissingError, InvalidInputError
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.partitions import encode_path, file_storage, to_absolute
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import merge_protocols
from airflow_delta_provider.delta.transaction.transaction import CommitResult
from airflow_delta_provider.operations.restore.metrics import RestoreMetrics

OPERATION = "RESTORE"
#: Missing files a RESTORE error names at most (delta-spark stops at 100 too).
MAX_MISSING_NAMED = 100
_CHECK_THREADS = 16


@dataclasses.dataclass
class RestorePlan:
    """What a RESTORE commits: files to re-add and to remove."""

    target: Snapshot
    latest: Snapshot
    restored: list[AddFile]
    removed: list[AddFile]

    def metrics(self) -> RestoreMetrics:
        """delta-spark's RESTORE ``operationMetrics``."""
        return RestoreMetrics(
            num_restored_files=len(self.restored),
            restored_files_size=sum(f.size for f in self.restored),
            num_removed_files=len(self.removed),
            removed_files_size=sum(f.size for f in self.removed),
            num_of_files_after_restore=self.target.num_files,
            table_size_after_restore=self.target.size_in_bytes,
        )


def plan_restore(
    table: DeltaTable, version: int | None = None, timestamp: dt.datetime | str | int | None = None
) -> RestorePlan:
    """The files RESTORE would re-add and remove; reads the log only. One of
    ``version`` (0 or more) and ``timestamp`` is given, as the spec's
    ``validate()`` checks; with neither, the latest version is refused."""
    latest = table.snapshot()
    target = table.snapshot(version=None if version is None else int(version), timestamp=timestamp)
    if target.version >= latest.version:
        raise InvalidInputError(
            f"the version to restore ({target.version}) must be older than the latest version ({latest.version})"
        )
    canonical = PathCanonicalizer(table.root)
    then = {(canonical(f.path), f.dv_id): f for f in target.files}
    now = {(canonical(f.path), f.dv_id): f for f in latest.files}
    # Re-added as data; stats a checkpoint held only as a struct become JSON, as a commit needs.
    restored = [
        dataclasses.replace(f, data_change=True, stats=f.stats_json(), stats_parsed=None)
        for key, f in then.items()
        if key not in now
    ]
    removed = [f for key, f in now.items() if key not in then]
    return RestorePlan(target, latest, restored, removed)


def missing_files(table: DeltaTable, files: Iterable[AddFile]) -> list[str]:
    """The data and deletion vector files of ``files`` that no longer exist:
    table-relative paths, or the absolute locations of files outside the
    table's root (a shallow clone's, checked in their own store)."""
    needed: list[str] = []  # as the log spells them
    for f in files:
        needed.append(f.path)
        dv = f.deletion_vector
        if dv is not None and dv.storage_type == "u":
            needed.append(encode_path(relative_dv_path(dv)))
        elif dv is not None and dv.storage_type == "p":
            needed.append(dv.path_or_inline_dv)
    paths = list(dict.fromkeys(needed))

    def gone(path: str) -> str | None:
        storage, rel = file_storage(table.storage, path)
        if storage.exists(rel):
            return None
        return rel if storage is table.storage else to_absolute(table.root, path)

    with ThreadPoolExecutor(_CHECK_THREADS) as pool:
        return sorted(p for p in pool.map(gone, paths) if p is not None)


def restore_table(
    table: DeltaTable,
    version: int | None = None,
    timestamp: dt.datetime | str | int | None = None,
    token: str | None = None,
) -> tuple[CommitResult, RestorePlan]:
    """RESTORE ``table`` to ``version`` or ``timestamp``; the commit and its plan.

    Raises :class:`~airflow_delta_provider.delta.errors.DataFilesMissingError`
    (nothing committed) when a file to re-add is gone, and InvalidInputError
    for a version that is not older than the latest.
    """
    plan = plan_restore(table, version, timestamp)
    missing = missing_files(table, plan.restored)
    if missing:
        named = ", ".join(missing[:MAX_MISSING_NAMED]) + (" ..." if len(missing) > MAX_MISSING_NAMED else "")
        raise DataFilesMissingError(
            f"cannot restore {table.uri} to version {plan.target.version}: {len(missing)} of its files no longer "
            f"exist (deleted by VACUUM or by hand): {named}"
        )
    # delta-spark records both, the one not given as null.
    parameters: dict[str, Any] = {"version": plan.target.version, "timestamp": None}
    if version is None:
        parameters = {"version": None, "timestamp": str(timestamp)}
    txn = table.transaction(OPERATION, parameters=parameters, snapshot=plan.latest)
    txn.read_whole_table()
    restored_metadata = _with_current_high_water_marks(plan.target.metadata, plan.latest.metadata)
    if restored_metadata != plan.latest.metadata:
        txn.update_metadata(restored_metadata)
    protocol = merge_protocols(plan.latest.protocol, plan.target.protocol)  # never downgraded
    if protocol != plan.latest.protocol:
        txn.update_protocol(protocol)
    now = int(time.time() * 1000)
    actions: list[AddFile | RemoveFile] = [*plan.restored, *(f.remove(now) for f in plan.removed)]
    txn.add_all(actions)
    return txn.commit(metrics=plan.metrics().commit_metrics(), token=token), plan


def _with_current_high_water_marks(restored: Metadata, latest: Metadata) -> Metadata:
    """The restored metadata, its identity high-water marks never behind the latest ones."""
    from airflow_delta_provider.delta.schema.types import schema_string
    from airflow_delta_provider.delta.table_features import identity_columns as identity

    schema = identity.keep_high_water_marks(restored.schema_json, latest.schema_json)
    if schema == restored.schema_json:
        return restored
    return dataclasses.replace(restored, schema_string=schema_string(schema))


__all__ = ["MAX_MISSING_NAMED", "OPERATION", "RestorePlan", "missing_files", "plan_restore", "restore_table"]
