"""VACUUM: delete files no version within the retention needs.

The plan is made by :mod:`airflow_delta_provider.delta.vacuum` from a listing
of the table folder and the snapshot; this module lists, deletes and logs.
As delta-spark's ``VacuumCommand`` does, a real run is bracketed by two empty
commits, ``VACUUM START`` (what will be deleted) and ``VACUUM END`` (what
was), both at SnapshotIsolation so they never conflict with writers. Large
deletes are spread over the executors. A dry run only reports.
"""

from __future__ import annotations

import os
import time
from typing import Iterable, Iterator

import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from airflow_delta_provider.delta import config
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.vacuum import (
    VacuumPlan,
    absolute_path,
    check_retention,
    list_table,
    plan_vacuum,
)


#: Above this many files, deletes run on the executors instead of the driver.
PARALLEL_DELETE_THRESHOLD = 1000
_FILES_PER_TASK = 1000


def run_vacuum(
    spark: SparkSession,
    table: str,
    retention_hours: float | None = None,
    dry_run: bool = False,
    enforce_retention: bool = True,
    token: str | None = None,
):
    """VACUUM ``table``; a CommandResult whose version is ``VACUUM END``'s
    (None on a dry run, which carries the planned ``files`` instead)."""
    from airflow_delta_provider.spark.result import CommandResult

    dt = DeltaTable(table)
    snap = dt.snapshot()
    configured_ms = config.deleted_file_retention_ms(snap.metadata)
    retention_ms = check_retention(retention_hours, configured_ms, enforce_retention)
    parameters = {
        "retentionCheckEnabled": enforce_retention,
        "defaultRetentionMillis": configured_ms,
        "specifiedRetentionMillis": retention_ms,
    }
    # Opening the transaction runs the writer-feature gate (vacuumProtocolCheck
    # and the rest) before anything is listed or deleted, dry runs included.
    start_txn = dt.transaction("VACUUM START", parameters=parameters, snapshot=snap, isolation_level="SnapshotIsolation")

    fs = dt.log_store.fs
    root = dt.root
    plan = plan_vacuum(
        table_root=root,
        listing=list_table(fs, root, snap.partition_columns),
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=snap.partition_columns,
        now_ms=int(time.time() * 1000),
        retention_ms=retention_ms,
    )
    start_metrics = {"numFilesToDelete": len(plan.files), "sizeOfDataToDelete": plan.size_in_bytes}
    if dry_run:
        files = [absolute_path(root, e.path) for e in plan.files]
        return CommandResult(table, "VACUUM", None, start_metrics, files=files)

    start_txn.commit(metrics=start_metrics, token=None)
    deleted = dirs = 0
    status = "FAILED"
    try:
        deleted = _delete_files(spark, table, fs, root, plan)
        dirs = _delete_dirs(fs, root, plan)
        status = "COMPLETED"
    finally:
        end_metrics = {"numDeletedFiles": deleted, "numVacuumedDirectories": dirs}
        end_txn = dt.transaction(
            "VACUUM END", parameters={"status": status}, snapshot=dt.snapshot(), isolation_level="SnapshotIsolation"
        )
        end = end_txn.commit(metrics=end_metrics, token=token if status == "COMPLETED" else None)
    return CommandResult(table, "VACUUM", end.version, end_metrics)


# --- deleting -------------------------------------------------------------------


def _delete_files(spark: SparkSession, table: str, fs: pafs.FileSystem, root: str, plan: VacuumPlan) -> int:
    paths = [absolute_path(root, e.path) for e in plan.files]
    if len(paths) <= PARALLEL_DELETE_THRESHOLD:
        return delete_paths(table, paths, fs)
    local = isinstance(fs, pafs.LocalFileSystem)

    def delete_partition(it: Iterator[str]) -> Iterator[int]:
        # Runs on an executor. Local files need only the standard library;
        # other stores need pyarrow (and this package) there.
        import os

        if local:
            n = 0
            for path in it:
                try:
                    os.remove(path)
                    n += 1
                except FileNotFoundError:
                    pass
        else:
            from airflow_delta_provider.spark.commands.vacuum import delete_paths

            n = delete_paths(table, it)
        yield n

    slices = max(1, min(len(paths) // _FILES_PER_TASK + 1, spark.sparkContext.defaultParallelism * 4))
    return spark.sparkContext.parallelize(paths, slices).mapPartitions(delete_partition).sum()


def delete_paths(table: str, paths: Iterable[str], fs: pafs.FileSystem | None = None) -> int:
    """Delete files; runs on the driver or an executor. Returns how many went.

    A file already gone counts as not deleted (a concurrent VACUUM got it).
    """
    if fs is None:
        from airflow_delta_provider.delta.log_store import resolve_table

        fs, _ = resolve_table(table)
    local = isinstance(fs, pafs.LocalFileSystem)
    n = 0
    for path in paths:
        try:
            os.remove(path) if local else fs.delete_file(path)
            n += 1
        except FileNotFoundError:
            pass
    return n


def _delete_dirs(fs: pafs.FileSystem, root: str, plan: VacuumPlan) -> int:
    """Remove the planned folders, deepest first, only while they are empty."""
    n = 0
    for rel in plan.dirs:
        path = absolute_path(root, rel)
        if isinstance(fs, pafs.LocalFileSystem):
            try:
                os.rmdir(path)  # never recursive: a file written meanwhile keeps it
                n += 1
            except OSError:
                pass
        elif not _has_entries(fs, path):
            fs.delete_dir(path)
            n += 1
    return n


def _has_entries(fs: pafs.FileSystem, path: str) -> bool:
    entries: Iterator = iter(fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
    return next(entries, None) is not None


__all__ = ["PARALLEL_DELETE_THRESHOLD", "delete_paths", "run_vacuum"]
