"""Reading data files of a snapshot: the reads a scan is made of.

- :func:`read_files`: a parquet read of exactly the given paths;
- :func:`literal_reads`: one read per partition group, its partition values
  added as typed literals (the ``literals`` plan of :mod:`.scan`), in
  either I/O mode;
- :func:`read_with_metadata`: a ``hadoop`` read with each row's file URI
  and row index when asked for, the rows that deletion vectors delete left
  out (:func:`~.deletion_vectors.drop_deleted_rows`);
- :func:`read_arrow`: the ``arrow`` source (:mod:`.arrow_source`) by
  logical column names;
- :func:`match_frame`: the live rows of files that match a condition, as
  (file key, row index) pairs: the touched-row scan that deletion vectors
  (:func:`matching_row_indexes`), row tracking and MERGE build on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StructField, StructType, TimestampNTZType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.partitions import parse_partition_values
from airflow_delta_provider.delta.storage import TableLocation, parse_location
from airflow_delta_provider.delta.table_features.column_mapping import ID
from airflow_delta_provider.spark.read.deletion_vectors import drop_deleted_rows, row_indexes_by_file
from airflow_delta_provider.spark.read.files import (
    KEY_COLUMN,
    ROW_INDEX_COLUMN,
    URI_COLUMN,
    column,
    data_schema,
    empty_frame,
    file_keys,
    file_uri,
    free_name,
    hadoop_path,
    key_column,
    physical_struct,
    spark_schema,
    table_location,
    to_logical,
)
from airflow_delta_provider.spark.runtime.hadoop_store_conf import apply_hadoop_store_settings
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io
from airflow_delta_provider.spark.runtime.session import is_connect

_FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"


#: Spark lists 32+ input paths with a distributed job (about 0.2 s); see read_files.
_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_files(spark: SparkSession, schema: StructType, paths: Sequence[str]) -> DataFrame:
    """A parquet read of exactly ``paths`` (absolute), with ``schema``.

    The paths come from the log, so each names one existing file and nothing
    is there to discover. Spark would still list 32 or more paths with a
    Spark job of its own; for local files a ``stat`` each in the driver is
    far cheaper, so the threshold is lifted while the read is set up (the
    listing happens here, not when the frame runs). Remote paths keep
    Spark's parallel listing, and each bucket among them (a shallow clone's
    files may lie in its source's) gets the connector settings of the
    table's own (:func:`apply_hadoop_store_settings`). Those carry keys (and
    a per-bucket credentials provider) only when the connection or the
    environment holds explicit keys, and never replace a key the cluster
    set: a cluster-wide provider chain (an instance role) stays in force.
    """
    if any("://" in p for p in paths):
        buckets = {(p.split("://", 1)[0], p.split("://", 1)[1].split("/", 1)[0]) for p in paths if "://" in p}
        for scheme, authority in buckets:
            apply_hadoop_store_settings(spark, parse_location(f"{scheme}://{authority}"))
        return spark.read.schema(schema).parquet(*paths)
    saved = spark.conf.get(_DISCOVERY_THRESHOLD, None)
    spark.conf.set(_DISCOVERY_THRESHOLD, str(max(len(paths) + 1, 32)))
    try:
        return spark.read.schema(schema).parquet(*paths)
    finally:
        if saved is None:
            spark.conf.unset(_DISCOVERY_THRESHOLD)
        else:
            spark.conf.set(_DISCOVERY_THRESHOLD, saved)


def partition_groups(files: Sequence[AddFile]) -> dict[tuple[Any, ...], list[AddFile]]:
    """``files`` grouped by their partition values, in first-seen order."""
    groups: dict[tuple[Any, ...], list[AddFile]] = defaultdict(list)
    for f in files:
        groups[tuple(sorted(f.partition_values.items()))].append(f)
    return groups


def literal_reads(
    spark: SparkSession,
    snapshot: Any,
    groups: dict[tuple[Any, ...], list[AddFile]],
    *,
    uri_column: str | None = None,
    row_index_column: str | None = None,
    partition_columns: Sequence[str] | None = None,
    io: str = "hadoop",
    extra_columns: Sequence[str] = (),
) -> list[DataFrame]:
    """One parquet read per partition group (in I/O mode ``io``), its
    ``partition_columns`` (default: the table's) added as typed literals and,
    given ``uri_column`` or ``row_index_column`` (names no table column has;
    hadoop mode), each row's file URI (Spark's ``_metadata.file_path``) or
    row index in that column. ``extra_columns`` are long columns the files
    may hold outside the table schema (row tracking's materialized columns),
    read after the data columns (null where a file lacks one). Rows deleted
    by a deletion vector are left out."""
    schema = snapshot.schema
    table_partitions = list(snapshot.partition_columns)
    wanted = table_partitions if partition_columns is None else list(partition_columns)
    read_schema = data_schema(schema, table_partitions)
    by_type = {f.name.lower(): f.dataType for f in spark_schema(schema).fields}
    parts: list[DataFrame] = []
    location = table_location(snapshot)
    for group in groups.values():
        if io == ARROW:
            df = read_arrow(spark, snapshot, group, columns=read_schema.names, extra_columns=extra_columns)
        else:
            df = read_with_metadata(
                spark,
                snapshot,
                location,
                read_schema,
                group,
                uri_column=uri_column,
                row_index_column=row_index_column,
                extra_columns=extra_columns,
            )
        if wanted:
            values = partition_values(snapshot, group[0], wanted)
            df = df.withColumns({c: _partition_literal(v, by_type[c.lower()]) for c, v in values.items()})
        parts.append(df)
    return parts


def read_with_metadata(
    spark: SparkSession,
    snapshot: Any,
    location: TableLocation,
    read_schema: StructType,
    files: Sequence[AddFile],
    *,
    uri_column: str | None = None,
    row_index_column: str | None = None,
    extra_columns: Sequence[str] = (),
) -> DataFrame:
    """A ``hadoop`` parquet read of ``files`` without the rows their deletion
    vectors delete, with each row's file URI and row index in the named
    columns when asked for, and the long ``extra_columns`` (outside the
    table schema, matched by name) after the data columns. The metadata
    columns are taken straight off the read: ``_metadata`` does not pass
    through projections."""
    paths = [hadoop_path(location, f.path) for f in files]
    mapping = snapshot.column_mapping
    physical = physical_struct(snapshot, read_schema)
    if mapping.mode == ID:
        spark.conf.set(_FIELD_ID_READ, "true")  # match parquet columns by field id
    extra = [StructField(name, LongType(), True) for name in extra_columns]
    df = read_files(spark, StructType([*physical.fields, *extra]) if extra else physical, paths)
    marked = any(f.deletion_vector is not None for f in files)
    if uri_column is None and row_index_column is None and not marked:
        return to_logical(df, physical, read_schema)
    taken = {f.name.lower() for f in (*read_schema.fields, *physical.fields)}
    uri_name = uri_column or free_name(URI_COLUMN, taken)
    row_name = row_index_column or free_name(ROW_INDEX_COLUMN, taken)
    metadata = df.metadataColumn("_metadata")
    df = df.withColumns({uri_name: metadata.getField("file_path"), row_name: metadata.getField("row_index")})
    if marked:
        uris = {file_uri(p): f.path for p, f in zip(paths, files)}
        df = drop_deleted_rows(df, uri_name, row_name, files, uris, snapshot)
    helpers = [n for n, asked in ((uri_name, uri_column), (row_name, row_index_column)) if asked is None]
    df = df.drop(*helpers) if helpers else df
    return to_logical(df, physical, read_schema)


def read_arrow(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    *,
    columns: Sequence[str] | None = None,
    extra_columns: Sequence[str] = (),
    **named: Any,
) -> DataFrame:
    """:func:`~.arrow_source.arrow_read` of ``files`` by logical column names
    (default: every column); physical names are read and renamed back. The
    long ``extra_columns`` (outside the table schema) follow them."""
    from airflow_delta_provider.spark.read.arrow_source import arrow_read

    mapping = snapshot.column_mapping
    location = table_location(snapshot)
    extra = [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in extra_columns]

    def with_extra(schema: dict[str, Any]) -> dict[str, Any]:
        return {**schema, "fields": [*schema.get("fields", ()), *extra]} if extra else schema

    if not mapping.enabled:
        if extra:
            names = [f["name"] for f in snapshot.schema["fields"]] if columns is None else list(columns)
            columns = [*names, *extra_columns]
        return arrow_read(
            spark, location, with_extra(snapshot.schema), snapshot.partition_columns, files, columns=columns, **named
        )
    logical_struct = spark_schema(snapshot.schema)
    wanted = [f.name for f in logical_struct.fields] if columns is None else list(columns)
    logical = StructType([next(f for f in logical_struct.fields if f.name.lower() == w.lower()) for w in wanted])
    physical = physical_struct(snapshot, logical)
    df = arrow_read(
        spark,
        location,
        with_extra(mapping.physical_schema()),
        [mapping.physical_column(c) for c in snapshot.partition_columns],
        files,
        columns=[*physical.names, *extra_columns],
        **named,
    )
    return to_logical(df, physical, logical)


def partition_values(snapshot: Any, add: AddFile, columns: Sequence[str]) -> dict[str, Any]:
    """Typed partition values of ``add`` for (logical) ``columns``."""
    raw = snapshot.column_mapping.logical_partition_values(add.partition_values, columns)
    return parse_partition_values(raw, snapshot.schema, columns)


def _partition_literal(value: Any, dtype: DataType) -> Column:
    """A typed partition value as a literal of ``dtype``.

    A ``timestamp_ntz`` value (a naive datetime) goes as its text: PySpark
    turns a naive datetime into an instant in the driver's local time zone,
    which would shift the value unless that zone is the session's.
    """
    if isinstance(dtype, TimestampNTZType) and value is not None:
        return F.lit(value.isoformat(sep=" ")).cast(dtype)
    return F.lit(value).cast(dtype)


def union_all(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _referenced_columns(spark: SparkSession, struct: StructType, condition: Column) -> list[str] | None:
    """The top-level columns of ``struct`` that ``condition`` reads, from
    Spark's analyzer over an empty frame (no job runs); None when unknown,
    as over Spark Connect, where the analyzed plan stays on the server."""
    if is_connect(spark):
        return None
    from py4j.protocol import Py4JError

    try:
        plan = empty_frame(spark, struct).filter(condition)._jdf.queryExecution().analyzed()
        names = set()
        refs = plan.references().iterator()
        while refs.hasNext():
            names.add(refs.next().name())
    except (AnalysisException, Py4JError, AttributeError):
        return None
    return [f.name for f in struct.fields if f.name in names]


def match_frame(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    condition: Column | None,
    io: str,
    *,
    with_data: bool = False,
    uri_keys: bool = False,
    extra_columns: Sequence[str] = (),
) -> tuple[DataFrame, str, str, dict[Any, str]]:
    """The live rows of ``files`` matching ``condition`` as (file key, row
    index) pairs: the frame, the two column names and ``{key: add.path}``.
    Only the condition's columns are read, unless ``with_data`` asks for
    every table column too (ahead of the two). With ``uri_keys`` a
    ``hadoop`` read keys rows by Spark's file URI itself rather than its
    hash: no per-row hashing, for callers that join first and group the
    few rows left. With ``with_data``, the long ``extra_columns`` the files
    may hold outside the table schema (row tracking's materialized columns)
    follow the table columns."""
    files = list(files)
    matched = F.lit(True) if condition is None else F.coalesce(condition, F.lit(False))
    table_struct = spark_schema(snapshot.schema)
    taken = {f.name.lower() for f in table_struct.fields}
    key_name, row_name = free_name(KEY_COLUMN, taken), free_name(ROW_INDEX_COLUMN, taken)
    extra_columns = list(extra_columns) if with_data else []
    data = [column(n) for n in (*table_struct.names, *extra_columns)] if with_data else []
    location = table_location(snapshot)
    if resolve_io(spark, location, io) == ARROW:
        frame = read_arrow(
            spark,
            snapshot,
            files,
            columns=None if with_data else _referenced_columns(spark, table_struct, matched),
            extra_columns=extra_columns,
            index_column=key_name,
            row_index_column=row_name,
        )
        by_position: dict[Any, str] = {i: f.path for i, f in enumerate(files)}
        kept: list[Column | str] = [*data, quote_identifier(key_name), quote_identifier(row_name)]
        return frame.filter(matched).select(*kept), key_name, row_name, by_position
    uri_column = free_name(URI_COLUMN, taken)
    groups = partition_groups(files)
    reads = literal_reads(
        spark, snapshot, groups, uri_column=uri_column, row_index_column=row_name, extra_columns=extra_columns
    )
    uris = {file_uri(hadoop_path(location, f.path)): f.path for f in files}
    if uri_keys:
        by_key, key = uris, F.col(uri_column).alias(key_name)
    else:
        by_key, hashed = file_keys(uris)
        key = key_column(uri_column, hashed).alias(key_name)
    frame = union_all([df.filter(matched).select(*data, key, quote_identifier(row_name)) for df in reads])
    return frame, key_name, row_name, by_key


def matching_row_indexes(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    condition: Column | None,
    io: str,
) -> dict[str, np.ndarray]:
    """Per file (``add.path``), the sorted row indexes of its live rows that
    match ``condition`` (None: every live row); files without a match are
    left out: the rows a DELETE or UPDATE marks in deletion vectors."""
    files = list(files)
    if not files:
        return {}
    return row_indexes_by_file(*match_frame(spark, snapshot, files, condition, io))


__all__ = [
    "literal_reads",
    "match_frame",
    "matching_row_indexes",
    "partition_groups",
    "partition_values",
    "read_arrow",
    "read_files",
    "read_with_metadata",
    "union_all",
]
