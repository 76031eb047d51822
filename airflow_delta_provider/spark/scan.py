"""Read a snapshot's data files into a DataFrame.

The file list always comes from the log (never a directory listing): only
live files are read, and vacuumed or orphan files are never seen. Data files
hold the data columns only; partition columns are added from
``add.partitionValues`` as typed values, and a column an older file lacks
reads as null because the files are read with the table's data schema.

Two plans are used:

- **literals**: one parquet read per partition, each with its partition
  values as literals. Best for unpartitioned tables and a few partitions.
- **file join**: one parquet read of every file, joined (broadcast) on
  Spark's ``_metadata.file_path`` to a small table of one row per file
  holding its ``add.path`` and typed partition values. Used when the caller
  wants each row's file (``with_file_path``) or the files span many
  partitions, where a union of many reads would be slow to plan.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from airflow_delta_provider.delta.actions import AddFile
from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.delta.partitions import encode_path, parse_partition_values, to_absolute

#: Name of the column ``scan(..., with_file_path=True)`` adds: the file's ``add.path``.
FILE_COLUMN = "_file"
_URI_COLUMN = "__delta_file_uri"
#: Above this many partitions, the file-join plan is used.
MAX_LITERAL_PARTITIONS = 16


def spark_schema(schema: dict[str, Any]) -> StructType:
    """A Spark StructType from Delta schema JSON (the two share one JSON form)."""
    return StructType.fromJson(schema)


def data_schema(schema: dict[str, Any], partition_columns: Iterable[str]) -> StructType:
    """The table schema without its partition columns: what data files hold."""
    excluded = {c.lower() for c in partition_columns}
    return StructType([f for f in spark_schema(schema).fields if f.name.lower() not in excluded])


def file_uri(absolute_path: str) -> str:
    """How Spark spells a local file in ``_metadata.file_path``: a ``file:``
    URI quoted like ``java.net.URI`` (which is what ``encode_path`` mimics)."""
    if "://" in absolute_path:
        return absolute_path
    return "file:" + encode_path(absolute_path)


def scan(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile] | None = None,
    *,
    with_file_path: bool = False,
) -> DataFrame:
    """The rows of ``files`` (default: every live file of ``snapshot``).

    Columns are the table schema's, in table order; with ``with_file_path``
    a string column ``_file`` follows, holding each row's ``add.path``
    exactly as the log spells it.
    """
    files = list(snapshot.files if files is None else files)
    schema = snapshot.schema
    partition_columns = list(snapshot.partition_columns)
    table_struct = spark_schema(schema)
    columns = [F.col(_quote(f.name)) for f in table_struct.fields]
    if with_file_path:
        columns.append(F.col(FILE_COLUMN))
    if not files:
        fields = list(table_struct.fields)
        if with_file_path:
            fields.append(StructField(FILE_COLUMN, StringType(), True))
        return spark.createDataFrame([], StructType(fields))

    read_schema = data_schema(schema, partition_columns)
    root = snapshot.table_root

    groups = _partition_groups(files)
    if not with_file_path and (not partition_columns or len(groups) <= MAX_LITERAL_PARTITIONS):
        return _union(_literal_reads(spark, snapshot, groups)).select(*columns)

    # File join: one read, each row matched to its file by Spark's own path.
    absolute = [to_absolute(root, f.path) for f in files]
    fields_by_name = {f.name.lower(): f for f in table_struct.fields}
    partition_struct = [(c, fields_by_name[c.lower()]) for c in partition_columns]
    lookup_schema = StructType(
        [StructField(_URI_COLUMN, StringType(), False), StructField(FILE_COLUMN, StringType(), False)]
        + [StructField(f.name, f.dataType, True) for _, f in partition_struct]
    )
    rows = []
    for f, path in zip(files, absolute):
        values = parse_partition_values(f.partition_values, schema, partition_columns)
        rows.append((file_uri(path), f.path, *(values[c] for c, _ in partition_struct)))
    lookup = spark.createDataFrame(rows, lookup_schema)
    data = spark.read.schema(read_schema).parquet(*absolute).withColumn(_URI_COLUMN, F.col("_metadata.file_path"))
    return data.join(F.broadcast(lookup), on=_URI_COLUMN, how="inner").select(*columns)


def count_matches(
    spark: SparkSession, snapshot: Any, files: Sequence[AddFile], condition: Column | None
) -> dict[str, int]:
    """How many rows of each file match ``condition`` (None: every row),
    keyed by ``add.path``; files without a match are left out.

    This is the touched-file scan of UPDATE and DELETE, so it is kept cheap:
    Spark reads only the columns ``condition`` references, counts the
    matching rows per ``_metadata.file_path`` (one row per file comes back),
    and the driver maps those URIs to the log's paths with :func:`file_uri`,
    the same spelling the file join uses. The join, which matches every row
    to its file, is only needed when the condition references partition
    columns of a table with many partitions (partition values come from the
    log, not the files); with few partitions the per-partition reads carry
    them as literals.
    """
    files = list(files)
    if not files:
        return {}
    matched = F.lit(True) if condition is None else F.coalesce(condition, F.lit(False))
    partition_columns = list(snapshot.partition_columns)
    groups = _partition_groups(files)
    if partition_columns and len(groups) > MAX_LITERAL_PARTITIONS:
        read_schema = data_schema(snapshot.schema, partition_columns)
        if _needs_columns_outside(spark, read_schema, matched):
            frame = scan(spark, snapshot, files, with_file_path=True).filter(matched)
            return {r[FILE_COLUMN]: int(r["count"]) for r in frame.groupBy(FILE_COLUMN).count().collect()}
        # The condition reads data columns only: one read, no partition values.
        groups = {(): files}
        partition_columns = []
    reads = _literal_reads(spark, snapshot, groups, with_uri=True, partition_columns=partition_columns)
    frame = _union([df.filter(matched).select(_URI_COLUMN) for df in reads])
    counts = {r[_URI_COLUMN]: int(r["count"]) for r in frame.groupBy(_URI_COLUMN).count().collect()}
    by_uri = {file_uri(to_absolute(snapshot.table_root, f.path)): f.path for f in files}
    unknown = sorted(set(counts) - set(by_uri))
    if unknown:
        raise DeltaError(f"internal error: Spark read files that were not asked for: {unknown[:3]}")
    return {by_uri[uri]: n for uri, n in counts.items()}


def _partition_groups(files: Sequence[AddFile]) -> dict[tuple, list[AddFile]]:
    """``files`` grouped by their partition values, in first-seen order."""
    groups: dict[tuple, list[AddFile]] = defaultdict(list)
    for f in files:
        groups[tuple(sorted(f.partition_values.items()))].append(f)
    return groups


def _literal_reads(
    spark: SparkSession,
    snapshot: Any,
    groups: dict[tuple, list[AddFile]],
    *,
    with_uri: bool = False,
    partition_columns: Sequence[str] | None = None,
) -> list[DataFrame]:
    """One parquet read per partition group, its ``partition_columns``
    (default: the table's) added as typed literals and, with ``with_uri``,
    each row's file URI (Spark's ``_metadata.file_path``) as ``_URI_COLUMN``."""
    schema = snapshot.schema
    table_partitions = list(snapshot.partition_columns)
    wanted = table_partitions if partition_columns is None else list(partition_columns)
    read_schema = data_schema(schema, table_partitions)
    by_type = {f.name.lower(): f.dataType for f in spark_schema(schema).fields}
    parts: list[DataFrame] = []
    for group in groups.values():
        paths = [to_absolute(snapshot.table_root, f.path) for f in group]
        df = spark.read.schema(read_schema).parquet(*paths)
        if with_uri:  # taken straight off the read: _metadata does not pass through projections
            df = df.withColumn(_URI_COLUMN, F.col("_metadata.file_path"))
        if wanted:
            values = parse_partition_values(group[0].partition_values, schema, wanted)
            df = df.withColumns({c: F.lit(v).cast(by_type[c.lower()]) for c, v in values.items()})
        parts.append(df)
    return parts


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _needs_columns_outside(spark: SparkSession, struct: StructType, condition: Column) -> bool:
    """Whether ``condition`` references a column ``struct`` lacks, decided by
    Spark's own analyzer over an empty frame (no job runs)."""
    try:
        spark.createDataFrame([], struct).filter(condition).schema
    except AnalysisException:
        return True
    return False


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """A column reference safe for any name (dots, spaces)."""
    return F.col(_quote(name))


__all__ = ["FILE_COLUMN", "column", "count_matches", "data_schema", "file_uri", "scan", "spark_schema"]
