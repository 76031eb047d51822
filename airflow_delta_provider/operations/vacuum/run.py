"""VACUUM: delete files no version within the retention needs.

The plan is made by :mod:`airflow_delta_provider.operations.vacuum.plan` from a listing
of the table folder and the snapshot; this module lists, deletes and logs,
all through the core's storage seam. As delta-spark's ``VacuumCommand`` does,
a real run is bracketed by two empty commits, ``VACUUM START`` (what will be
deleted) and ``VACUUM END`` (what was), both at SnapshotIsolation so they
never conflict with writers. On an object store, deletes go in parallel
batches through the store's bulk delete (S3 ``DeleteObjects``); on a local
filesystem, large deletes are spread over the executors. A dry run only
reports.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.log.last_vacuum_info import write_last_vacuum_info
from airflow_delta_provider.delta.storage import TableStorage
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.transaction.post_commit import snapshot_of
from airflow_delta_provider.operations.vacuum.lite import plan_vacuum_lite
from airflow_delta_provider.operations.vacuum.metrics import VacuumEndMetrics, VacuumStartMetrics
from airflow_delta_provider.operations.vacuum.plan import (
    VacuumPlan,
    absolute_path,
    check_retention,
    checked_relative,
    list_table,
    plan_vacuum,
)
from airflow_delta_provider.operations.vacuum.spec import LITE_VACUUM, VacuumSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_delta_provider.operations.result import CommandResult


#: Above this many files, deletes run on the executors instead of the driver.
PARALLEL_DELETE_THRESHOLD = 1000
_FILES_PER_TASK = 1000


def run(
    spark: SparkSession | None, spec: VacuumSpec, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """VACUUM the spec's table; a CommandResult whose version is ``VACUUM END``'s
    (None on a dry run, which carries the planned ``files`` instead).
    ``spark`` may be None: this process then deletes every file itself.
    Mode ``lite`` finds the files from the log and lists no data folder
    (:mod:`airflow_delta_provider.operations.vacuum.lite`)."""
    from airflow_delta_provider.operations.result import CommandResult

    table = spec.table_path
    lite = spec.mode == LITE_VACUUM
    dt = DeltaTable(table, storage_options)
    if lite:
        dt.log_store.keep_commits()  # LITE reads again some commits the snapshot replays
    snap = dt.snapshot()
    configured_ms = table_properties.deleted_file_retention_ms(snap.metadata)
    retention_ms = check_retention(spec.retention_hours, configured_ms, spec.retention_check)
    parameters = {
        "retentionCheckEnabled": spec.retention_check,
        "defaultRetentionMillis": configured_ms,
        "specifiedRetentionMillis": retention_ms,
    }
    # Opening the transaction runs the writer-feature gate (vacuumProtocolCheck
    # and the rest) before anything is listed or deleted, dry runs included.
    start_txn = dt.transaction(
        "VACUUM START", parameters=parameters, snapshot=snap, isolation_level=table_properties.SNAPSHOT_ISOLATION
    )

    storage = dt.storage
    root = dt.root
    now_ms = int(time.time() * 1000)
    latest_outside_retention = None  # what _last_vacuum_info records: nothing after a FULL one, as delta-spark
    if lite:
        lite_plan = plan_vacuum_lite(dt, snap, now_ms=now_ms, retention_ms=retention_ms)
        plan, latest_outside_retention = lite_plan.plan, lite_plan.latest_outside_retention
    else:
        plan = plan_vacuum(
            table_root=root,
            listing=list_table(storage, snap.partition_columns),
            adds=snap.files,
            tombstones=snap.all_tombstones,
            partition_columns=snap.partition_columns,
            now_ms=now_ms,
            retention_ms=retention_ms,
        )
    start_metrics = VacuumStartMetrics(num_files_to_delete=len(plan.files), size_of_data_to_delete=plan.size_in_bytes)
    if spec.dry_run:
        files = [absolute_path(root, e.path) for e in plan.files]
        return CommandResult(table, "VACUUM", None, start_metrics, files=files)

    started = start_txn.commit(metrics=start_metrics.commit_metrics(), token=None)
    deleted = 0
    status = "FAILED"
    try:
        deleted = _delete_files(spark, storage, plan)
        for rel in plan.dirs:
            storage.delete_empty_dir(checked_relative(rel))
        status = "COMPLETED"
    finally:
        # delta-spark counts the folders it searched, not those it deleted.
        end_metrics = VacuumEndMetrics(num_deleted_files=deleted, num_vacuumed_directories=plan.searched_dirs)
        # END is made on START's version, known without loading the table
        # again: START changed no state (with in-commit timestamps, END still
        # reads START's time). A commit that came between is met by END's own
        # commit, which then lands after it, under the metadata that commit
        # left (SnapshotIsolation: no conflict).
        after_start = snapshot_of(dt, started, snap)
        end_txn = dt.transaction(
            "VACUUM END",
            parameters={"status": status},
            snapshot=after_start,
            isolation_level=table_properties.SNAPSHOT_ISOLATION,
        )
        end = end_txn.commit(metrics=end_metrics.commit_metrics(), token=spec.token if status == "COMPLETED" else None)
    write_last_vacuum_info(dt.log_store, latest_outside_retention)
    return CommandResult(table, "VACUUM", end.version, end_metrics)


# --- deleting -------------------------------------------------------------------


def _delete_files(spark: SparkSession | None, storage: TableStorage, plan: VacuumPlan) -> int:
    paths = [checked_relative(e.path) for e in plan.files]
    if spark is None or not storage.is_local or len(paths) <= PARALLEL_DELETE_THRESHOLD or _is_connect(spark):
        # Object stores take bulk deletes from the driver. With no Spark, or
        # over Spark Connect, this process deletes: it reaches the table, as
        # its commits do.
        return storage.delete_many(paths)
    absolute = [storage.location.child(p) for p in paths]

    def delete_partition(it: Iterable[str]) -> Iterable[int]:
        # Runs on an executor, which sees the same (shared) filesystem.
        import contextlib
        import os

        from airflow_delta_provider.delta.storage.store import hadoop_checksum

        n = 0
        for path in it:
            try:
                os.remove(path)
                n += 1
            except FileNotFoundError:
                pass
            with contextlib.suppress(FileNotFoundError):
                os.remove(hadoop_checksum(path))  # its checksum goes with it, as through Hadoop
        yield n

    slices = max(1, min(len(absolute) // _FILES_PER_TASK + 1, spark.sparkContext.defaultParallelism * 4))
    return spark.sparkContext.parallelize(absolute, slices).mapPartitions(delete_partition).sum()


def _is_connect(spark: SparkSession) -> bool:
    from airflow_delta_provider.spark.runtime.session import is_connect

    return is_connect(spark)


__all__ = ["PARALLEL_DELETE_THRESHOLD", "run"]
