"""CHANGES: write the change data feed of a version range to a folder.

``python -m airflow_delta_provider.spark changes TABLE --start N [--end M]
--output URI --output-format parquet`` reads the changed rows of versions
``N`` to ``M`` (:func:`~airflow_delta_provider.spark.read.table_changes.read_changes`)
and writes them to ``URI``, replacing what a failed earlier try left there,
so a retried task writes the same output. Each row has the table's columns,
``_change_type``, ``_commit_version`` and ``_commit_timestamp``.

It commits nothing. The result's ``version`` is the last version read (the
next run starts after it); its metrics give the rows per change type
(``changes``). The result is also left in the output folder as
``_delta_changes.json`` (a name readers of the folder skip), where a task
finds it when the driver's stdout does not come back (cluster deploy mode).

In ``hadoop`` I/O Spark writes the output in any format it has
(parquet, json, csv, orc); in ``arrow`` I/O (an object store without Hadoop
connectors) it is written as parquet through the storage layer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage import TableLocation, TableStorage, open_storage, parse_location
from airflow_delta_provider.delta.table_changes import SUMMARY_FILE
from airflow_delta_provider.delta.table_features.change_data_feed import CHANGE_TYPE_COLUMN, CHANGE_TYPES
from airflow_delta_provider.operations.changes.metrics import ChangesMetrics
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.spark.read.table_changes import read_changes
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io

OPERATION = "CHANGES"


def run(spark: SparkSession, spec: ChangesSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Write the changes of versions ``spec.start_version`` to ``spec.end_version`` (default:
    latest) of ``spec.table_path`` to ``spec.output_path``; the result's metrics are
    :class:`~.metrics.ChangesMetrics`."""
    started = time.monotonic()
    table, output, output_format = spec.table_path, spec.output_path, spec.output_format
    location = parse_location(output)
    _check_output(location, parse_location(table), storage_options)
    mode = resolve_io(spark, location, spec.io)
    if mode == ARROW and output_format != "parquet":
        raise InvalidInputError(f"{output} is written with arrow I/O, which writes parquet only, not {output_format}")
    changes = read_changes(
        spark, table, spec.start_version, spec.end_version, io=spec.io, storage_options=storage_options
    )
    frame = changes.frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = {t: 0 for t in CHANGE_TYPES}
        for row in frame.groupBy(CHANGE_TYPE_COLUMN).count().collect():
            counts[row[0]] = row[1]
        storage = open_storage(location, storage_options)
        _clear(storage)
        if mode == ARROW:
            _write_arrow(frame, storage)
        else:
            writer = frame.write.mode("overwrite").format(output_format)
            if output_format == "csv":
                writer = writer.option("header", "true")
            writer.save(location.spark_uri())
    finally:
        frame.unpersist()
    rng = changes.range
    metrics = ChangesMetrics(
        start_version=rng.start,
        end_version=rng.end,
        num_output_rows=sum(counts.values()),
        num_change_files=len(rng.files),
        changes=counts,
        output=output,
        execution_time_ms=int((time.monotonic() - started) * 1000),
    )
    result = CommandResult(table, OPERATION, rng.end, metrics)
    storage.put(SUMMARY_FILE, result.to_json().encode("utf-8"))
    return result


def _check_output(output: TableLocation, table: TableLocation, storage_options: Mapping[str, str] | None) -> None:
    """Refuse an output folder whose files must not be replaced: the table's
    folder, one inside it or holding it, and a folder with files this command
    did not write (no :data:`SUMMARY_FILE`) or holding any Delta table."""
    same = output.uri.rstrip("/") == table.uri.rstrip("/")
    if same or table.relative(output.uri) is not None or output.relative(table.uri) is not None:
        raise InvalidInputError(
            f"output {output.uri} is, lies inside or holds the table {table.uri}; "
            "the output folder is replaced on each run: give a folder of its own"
        )
    files = [m.path for m in open_storage(output, storage_options).list_tree("") if not m.is_dir]
    if any(p == "_delta_log" or p.startswith("_delta_log/") or "/_delta_log/" in p for p in files):
        raise InvalidInputError(f"output {output.uri} holds a Delta table; give a folder of its own")
    if files and SUMMARY_FILE not in files:
        raise InvalidInputError(
            f"output {output.uri} holds files an earlier CHANGES run did not write (no {SUMMARY_FILE}); "
            "its content is replaced on each run: give an empty folder or one of its own"
        )


def _clear(storage: TableStorage) -> None:
    """Delete what an earlier try wrote to the output folder."""
    leftovers = [m.path for m in storage.list_tree("") if not m.is_dir]
    if leftovers:
        storage.delete_many(leftovers)


def _write_arrow(frame: DataFrame, storage: TableStorage) -> None:
    from airflow_delta_provider.spark.write.arrow_writer import write_arrow

    write_arrow(frame, storage, frame.columns, [], {}, [])


__all__ = ["OPERATION", "run"]
