"""Table changes in the Spark engine: the change data feed of a version range as a DataFrame.

:func:`read_changes` turns the files the core lists for a version range
(:func:`~airflow_delta_provider.delta.table_changes.changes_between`) into
one DataFrame: the table's columns (as of the range's end) followed by
``_change_type``, ``_commit_version`` and ``_commit_timestamp``, in either
I/O mode. Files are read in a few scans, each row tied to its commit by its
file's path.

The ``cdc`` files it reads are written by
:mod:`airflow_delta_provider.spark.write.change_data`; the CHANGES operation
(:mod:`airflow_delta_provider.operations.changes.spark`) writes what it reads
to a folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_changes import ChangeFile, ChangeRange, changes_between
from airflow_delta_provider.delta.table_features.change_data_feed import (
    CHANGE_TYPE_COLUMN,
    COMMIT_TIMESTAMP_COLUMN,
    COMMIT_VERSION_COLUMN,
)
from airflow_delta_provider.delta.table_features.column_mapping import ColumnMapping
from airflow_delta_provider.spark.read.files import column, empty_frame, free_name, spark_schema
from airflow_delta_provider.spark.read.scan import scan

_CHANGE_TYPE_FIELD = {"name": CHANGE_TYPE_COLUMN, "type": "string", "nullable": True, "metadata": {}}


@dataclass
class Changes:
    """The changes of a version range, as a DataFrame, and what they came from."""

    frame: DataFrame
    range: ChangeRange


def read_changes(
    spark: SparkSession,
    table: str,
    start: int,
    end: int | None = None,
    *,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> Changes:
    """The changed rows of versions ``start`` to ``end`` (default: latest) of ``table``."""
    changes = changes_between(DeltaTable(table, storage_options), start, end)
    snapshot = changes.snapshot
    struct = spark_schema(snapshot.schema)
    taken = {f.name.lower() for f in struct.fields} | {c.lower() for c in (CHANGE_TYPE_COLUMN,)}
    file_column = free_name("_change_file", taken)
    frames = []
    cdc = [f for f in changes.files if f.is_change_data]
    if cdc:
        frames += _read(spark, _WithChangeType(snapshot), cdc, file_column, io)
    derived = [f for f in changes.files if not f.is_change_data]
    if derived:
        frames += _read(spark, snapshot, derived, file_column, io)
    columns = [*struct.names, CHANGE_TYPE_COLUMN, COMMIT_VERSION_COLUMN, COMMIT_TIMESTAMP_COLUMN]
    if not frames:
        empty = StructType(
            [
                *struct.fields,
                StructField(CHANGE_TYPE_COLUMN, StringType()),
                StructField(COMMIT_VERSION_COLUMN, LongType()),
                StructField(COMMIT_TIMESTAMP_COLUMN, TimestampType()),
            ]
        )
        return Changes(empty_frame(spark, empty), changes)
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return Changes(frame.select(*[column(c) for c in columns]), changes)


def _read(spark: SparkSession, snapshot: Any, files: list[ChangeFile], file_column: str, io: str) -> list[DataFrame]:
    """Scans of ``files``, each row with its change type, version and timestamp.

    A path may hold changes of several commits (a file removed, restored and
    removed again): such files are read in separate scans, so that joining
    on the path ties each row to one commit."""
    rounds: list[list[ChangeFile]] = []
    paths: list[set[str]] = []
    for f in files:
        for group, seen in zip(rounds, paths):
            if f.file.path not in seen:
                group.append(f)
                seen.add(f.file.path)
                break
        else:
            rounds.append([f])
            paths.append({f.file.path})
    lookup_schema = StructType(
        [
            StructField(file_column, StringType(), False),
            StructField("_lookup_type", StringType(), True),
            StructField(COMMIT_VERSION_COLUMN, LongType(), False),
            StructField("_lookup_ms", LongType(), False),
        ]
    )
    frames = []
    for group in rounds:
        adds: list[AddFile] = [f.file for f in group]
        rows = [(f.file.path, f.change_type, f.version, f.timestamp_ms) for f in group]
        lookup = spark.createDataFrame(rows, lookup_schema)
        data = scan(spark, snapshot, adds, with_file_path=True, file_column=file_column, io=io)
        if CHANGE_TYPE_COLUMN not in data.columns:
            data = data.withColumn(CHANGE_TYPE_COLUMN, F.lit(None).cast("string"))
        joined = data.join(F.broadcast(lookup), on=file_column, how="inner")
        frames.append(
            joined.withColumn(CHANGE_TYPE_COLUMN, F.coalesce(column("_lookup_type"), column(CHANGE_TYPE_COLUMN)))
            .withColumn(COMMIT_TIMESTAMP_COLUMN, F.timestamp_millis(column("_lookup_ms")))
            .drop("_lookup_type", "_lookup_ms", file_column)
        )
    return frames


class _WithChangeType:
    """A snapshot whose schema ends with ``_change_type``: how change data
    files are read (the column is never mapped: it has no id and its
    physical name is its name)."""

    def __init__(self, snapshot: Any) -> None:
        self._snapshot = snapshot
        self.schema = {**snapshot.schema, "fields": [*snapshot.schema["fields"], _CHANGE_TYPE_FIELD]}
        self.column_mapping = _ChangeTypeMapping(snapshot.column_mapping.mode, snapshot.schema)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._snapshot, name)


class _ChangeTypeMapping(ColumnMapping):
    """The table's column mapping, with ``_change_type`` appended as it is."""

    def physical_schema(self, *, for_write: bool = False) -> dict[str, Any]:
        base = super().physical_schema(for_write=for_write)
        return {**base, "fields": [*base["fields"], _CHANGE_TYPE_FIELD]}

    def physical_path(self, path: Any) -> Any:
        path = tuple(path)
        if path == (CHANGE_TYPE_COLUMN,):
            return path
        return super().physical_path(path)


__all__ = ["Changes", "read_changes"]
