"""Row tracking in the Spark engine: stable row ids and row commit versions.

PROTOCOL.md "Row Tracking", reader and writer requirements, as delta-spark
does them (``RowId``, ``RowCommitVersion``, ``MaterializedRowTrackingColumn``):

- a row's stable **row id** is its file's materialized row id column where
  that is not null, else the file's ``baseRowId`` plus the row's physical
  index in the file;
- its stable **row commit version** is the materialized row commit version
  column where not null, else the file's ``defaultRowCommitVersion``.

:func:`tracked_rows` reads files with both (the core's ``add`` actions give
``baseRowId`` and ``defaultRowCommitVersion``; a broadcast join on the file
key of :func:`~.file_reads.match_frame` brings them to the rows, in both I/O
modes). :func:`read_with_row_tracking` is the reader's view: the table's
columns plus a ``_metadata`` struct of ``row_id`` and ``row_commit_version``.

A command that copies rows to new files (UPDATE, DELETE, MERGE, OPTIMIZE)
reads them with :func:`tracked_rows` and writes the id (and, for rows it
does not change, the commit version) into the materialized columns of the
new files, named in the table configuration: physical columns outside the
table schema, passed to :func:`~airflow_delta_provider.spark.write.files.write_files` as ``hidden_columns``.
A changed row's version is written NULL, so it reads as the new file's
``defaultRowCommitVersion``: the version of the commit that changed it.
New rows (APPEND, MERGE inserts) get no materialized values: their ids are
their file's fresh ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table_features import row_tracking
from airflow_delta_provider.spark.read.file_reads import match_frame
from airflow_delta_provider.spark.read.files import column, empty_frame, free_name, spark_schema, table_location
from airflow_delta_provider.spark.runtime.io_mode import resolve_io

#: The struct column :func:`read_with_row_tracking` adds, and its fields (delta-spark's names).
METADATA_COLUMN = "_metadata"
ROW_ID, ROW_COMMIT_VERSION = "row_id", "row_commit_version"
_BASE, _DEFAULT_VERSION = "__delta_base_row_id", "__delta_default_row_commit_version"


@dataclass(frozen=True)
class Materialized:
    """The materialized columns of a table with row tracking enabled."""

    row_id: str
    row_commit_version: str

    @property
    def names(self) -> list[str]:
        return [self.row_id, self.row_commit_version]


def materialized(snapshot: Any) -> Materialized | None:
    """The table's materialized columns when rows keep stable ids (row
    tracking enabled), else None: commands then write none."""
    if not row_tracking.enabled(snapshot.protocol, snapshot.metadata):
        return None
    names = row_tracking.materialized_columns(snapshot.metadata)
    assert names is not None
    return Materialized(*names)


def tracked_rows(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    io: str,
    condition: Column | None = None,
) -> tuple[DataFrame, Materialized]:
    """The live rows of ``files`` (matching ``condition``, default all): the
    table's columns, then its two materialized columns holding each row's
    *stable* row id and row commit version (so a write of the frame with
    ``hidden_columns`` keeps both). A table without row tracking enabled is
    an InvalidInputError."""
    names = materialized(snapshot)
    if names is None:
        raise InvalidInputError(f"table {snapshot.table_root} does not have row tracking enabled")
    files = list(files)
    table = spark_schema(snapshot.schema)
    if not files:
        fields = [*table.fields, *(StructField(n, LongType(), True) for n in names.names)]
        return empty_frame(spark, StructType(fields)), names
    frame, key, row, by_key = match_frame(
        spark, snapshot, files, condition, io, with_data=True, extra_columns=names.names
    )
    stable = with_stable_ids(spark, frame, key, row, by_key, files, names)
    return stable.select(*[column(n) for n in (*table.names, *names.names)]), names


def with_stable_ids(
    spark: SparkSession,
    frame: DataFrame,
    key: str,
    row: str,
    by_key: dict[Any, str],
    files: Sequence[AddFile],
    names: Materialized,
) -> DataFrame:
    """A :func:`~.file_reads.match_frame` frame (read ``with_data`` and the
    materialized columns as ``extra_columns``) with those columns holding
    each row's stable row id and row commit version; its other columns kept."""
    taken = {n.lower() for n in frame.columns}
    base, default = free_name(_BASE, taken), free_name(_DEFAULT_VERSION, taken)
    by_path = {f.path: f for f in files}
    lookup = spark.createDataFrame(
        [(k, by_path[p].base_row_id, by_path[p].default_row_commit_version) for k, p in by_key.items()],
        StructType(
            [
                StructField(key, frame.schema[key].dataType, False),
                StructField(base, LongType()),
                StructField(default, LongType()),
            ]
        ),
    )
    joined = frame.join(F.broadcast(lookup), on=key, how="inner")
    return joined.withColumns(
        {
            names.row_id: F.coalesce(column(names.row_id), column(base) + column(row)),
            names.row_commit_version: F.coalesce(column(names.row_commit_version), column(default)),
        }
    ).drop(base, default)


def read_with_row_tracking(
    spark: SparkSession, snapshot: Any, files: Sequence[AddFile] | None = None, io: str = "auto"
) -> DataFrame:
    """The rows of ``files`` (default: every live file) with the table's
    columns and a ``_metadata`` struct of ``row_id`` and
    ``row_commit_version``, as delta-spark exposes them. A table whose
    schema has a ``_metadata`` column, or without row tracking enabled, is
    an InvalidInputError."""
    if any(f["name"].lower() == METADATA_COLUMN for f in snapshot.schema["fields"]):
        raise InvalidInputError(f"the table has a column named {METADATA_COLUMN}: row tracking cannot be shown")
    mode = resolve_io(spark, table_location(snapshot), io)
    frame, names = tracked_rows(spark, snapshot, list(snapshot.files if files is None else files), mode)
    struct = F.struct(column(names.row_id).alias(ROW_ID), column(names.row_commit_version).alias(ROW_COMMIT_VERSION))
    table = spark_schema(snapshot.schema).names
    return frame.select(*[column(n) for n in table], struct.alias(METADATA_COLUMN))


def copied(names: Materialized, changed: Column | None = None) -> list[Column]:
    """The materialized columns of rows a command copies from a
    :func:`tracked_rows` frame: the id kept, the commit version kept unless
    ``changed`` (a row the command changes: NULL, i.e. the new commit's)."""
    version = column(names.row_commit_version)
    if changed is not None:
        version = F.when(changed, F.lit(None).cast("long")).otherwise(version)
    return [column(names.row_id).alias(names.row_id), version.alias(names.row_commit_version)]


__all__ = [
    "METADATA_COLUMN",
    "ROW_COMMIT_VERSION",
    "ROW_ID",
    "Materialized",
    "copied",
    "materialized",
    "read_with_row_tracking",
    "tracked_rows",
    "with_stable_ids",
]
