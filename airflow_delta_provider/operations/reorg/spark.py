"""REORG ... APPLY (PURGE): rewrite the files that hold data the table no longer shows.

As delta-spark's ``REORG TABLE t APPLY (PURGE)`` does, it rewrites every
file that carries a deletion vector, so the deleted rows are gone from the
data files (for compliance, or to spare readers the vectors), and every file
that holds a column the table's schema does not name: a column dropped
under column mapping, or the ``_change_type`` that delta-spark's DML writes
into data files on tables with the change data feed. ``min_deleted_ratio``
narrows the files with vectors: those whose vector hides more than that
share of their rows (default 0: every file with a vector).

The rewrite changes no row: the new files are added and the old ones
removed with ``dataChange=false``, as delta-spark's OPTIMIZE-style commits
are, so streaming readers and the sensors see no new data. Files a
concurrent command removes or re-marks make this commit fail with a conflict.
With row tracking enabled the kept rows keep their stable ids and commit
versions (:mod:`~airflow_delta_provider.spark.read.row_tracking`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from pyspark.sql import SparkSession

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.delta.footers import files_with_extra_columns
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.transaction.transaction import Transaction
from airflow_delta_provider.operations.reorg.metrics import ReorgMetrics, file_sizes
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.result import CommandResult, metric_name
from airflow_delta_provider.spark.runtime.io_mode import resolve_io

OPERATION = "REORG"
#: delta-spark's REORG ... APPLY (PURGE) parameters: no predicate.
_PARAMETERS = {"predicate": json.dumps([]), "applyPurge": True}


def run(spark: SparkSession, spec: ReorgSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Rewrite the files of ``spec.table_path`` whose vectors hide more than
    ``spec.min_deleted_ratio`` of their rows; ``version`` is None when none does.
    The result's metrics are :class:`~.metrics.ReorgMetrics`."""
    started = time.monotonic()
    target = DeltaTable(spec.table_path, storage_options)
    snapshot = target.snapshot()
    txn = target.transaction(OPERATION, parameters=_PARAMETERS, snapshot=snapshot)
    extra = files_with_extra_columns(target.storage, snapshot)
    purged = [f for f in snapshot.files if f.path in extra or _hides_more_than(f, spec.min_deleted_ratio)]
    if not purged:
        return CommandResult(spec.table_path, OPERATION, None, _metrics([], [], started))
    mode = resolve_io(spark, target.storage.location, spec.io)
    return rewrite_files(spark, target, snapshot, txn, purged, mode=mode, token=spec.token, started=started)


def rewrite_files(
    spark: SparkSession,
    target: DeltaTable,
    snapshot: Snapshot,
    txn: Transaction,
    files: list[AddFile],
    *,
    mode: str,
    token: str | None,
    started: float,
) -> CommandResult:
    """Rewrite ``files`` of ``snapshot`` keeping their live rows, and commit
    the new files and the removes (``dataChange=false``) in ``txn``."""
    from airflow_delta_provider.spark.read.row_tracking import materialized, tracked_rows
    from airflow_delta_provider.spark.read.scan import scan
    from airflow_delta_provider.spark.write.files import WrittenFiles, write_files

    txn.read_files(files)
    tracking = materialized(snapshot)  # the kept rows keep their stable ids and versions
    if tracking is None:
        frame, hidden = scan(spark, snapshot, files, io=mode), []
    else:
        frame, hidden = tracked_rows(spark, snapshot, files, mode)[0], tracking.names
    adds = write_files(frame, snapshot, snapshot.schema, snapshot.partition_columns, io=mode, hidden_columns=hidden)
    adds = [replace(a, data_change=False) for a in adds]
    with WrittenFiles(target, adds) as written:
        check_rows_kept(OPERATION, files, adds)
        now = int(time.time() * 1000)
        txn.add_all([*adds, *(f.remove(now, data_change=False) for f in files)])
        metrics = _metrics(adds, files, started)
        written.committing()
        commit = txn.commit(metrics=metrics.commit_metrics(), token=token)
    return CommandResult(target.uri, OPERATION, commit.version, metrics)


def file_rewriter(
    spark: SparkSession, target: DeltaTable, io: str = "auto"
) -> Callable[[Snapshot, list[AddFile]], int]:
    """A REORG rewrite of given files, for the core's DROP FEATURE
    (:data:`~airflow_delta_provider.operations.alter.drop_feature.FileRewrite`):
    it purges deletion vectors, and rewrites files in the table's (widened) types."""
    mode = resolve_io(spark, target.storage.location, io)

    def rewrite(snapshot: Snapshot, files: list[AddFile]) -> int:
        txn = target.transaction(OPERATION, parameters=_PARAMETERS, snapshot=snapshot)
        result = rewrite_files(spark, target, snapshot, txn, files, mode=mode, token=None, started=time.monotonic())
        assert result.version is not None
        return result.version

    return rewrite


def check_rows_kept(operation: str, rewritten: list[AddFile], adds: list[AddFile]) -> None:
    """A rewrite that keeps every row (REORG, OPTIMIZE) writes exactly the live
    rows it read: any other count means deleted rows came back (or rows went
    missing), and nothing is committed."""
    live = [f.num_live_records for f in rewritten]
    known = [n for n in live if n is not None]
    if len(known) < len(live):
        return
    written = sum(a.num_records or 0 for a in adds)
    if written != sum(known):
        raise DeltaError(
            f"internal error: {operation} wrote {written} rows where the files it rewrote hold {sum(known)} live "
            "rows; nothing is committed"
        )


def _hides_more_than(f: AddFile, ratio: float) -> bool:
    if f.deletion_vector is None or f.deletion_vector.cardinality == 0:
        return False
    if f.num_records is None:  # no stats: the share is unknown, purge
        return True
    return f.deletion_vector.cardinality / max(f.num_records, 1) > ratio


def file_size_metrics(adds: list[AddFile]) -> dict[str, int]:
    """delta-spark's sizes of the files an OPTIMIZE or REORG wrote, by its names
    (:func:`~.metrics.file_sizes`)."""
    sizes = file_sizes([a.size for a in adds])
    return {metric_name(f): sizes[f.name] for f in dataclasses.fields(ReorgMetrics) if f.name in sizes}


def _metrics(adds: list[AddFile], removed: list[AddFile], started: float) -> ReorgMetrics:
    return ReorgMetrics(
        num_added_files=len(adds),
        num_removed_files=len(removed),
        num_added_bytes=sum(a.size for a in adds),
        num_removed_bytes=sum(f.size for f in removed),
        **file_sizes([a.size for a in adds]),
        num_deletion_vectors_removed=sum(f.deletion_vector is not None for f in removed),
        num_purged_rows=sum(f.num_deleted_records for f in removed),
        execution_time_ms=int((time.monotonic() - started) * 1000),
    )


__all__ = ["OPERATION", "check_rows_kept", "file_rewriter", "file_size_metrics", "rewrite_files", "run"]
