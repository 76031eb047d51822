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

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from airflow_delta_provider.delta.actions import AddFile
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

    def read(paths: list[str]) -> DataFrame:
        return spark.read.schema(read_schema).parquet(*paths)

    groups: dict[tuple, list[AddFile]] = defaultdict(list)
    for f in files:
        groups[tuple(sorted((k, v) for k, v in f.partition_values.items()))].append(f)

    if not with_file_path and (not partition_columns or len(groups) <= MAX_LITERAL_PARTITIONS):
        by_type = {f.name.lower(): f.dataType for f in table_struct.fields}
        parts: list[DataFrame] = []
        for group in groups.values():
            values = parse_partition_values(group[0].partition_values, schema, partition_columns)
            df = read([to_absolute(root, f.path) for f in group])
            literals = {c: F.lit(v).cast(by_type[c.lower()]) for c, v in values.items()}
            parts.append(df.withColumns(literals) if literals else df)
        out = parts[0]
        for df in parts[1:]:
            out = out.unionByName(df)
        return out.select(*columns)

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
    data = read(absolute).withColumn(_URI_COLUMN, F.col("_metadata.file_path"))
    return data.join(F.broadcast(lookup), on=_URI_COLUMN, how="inner").select(*columns)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """A column reference safe for any name (dots, spaces)."""
    return F.col(_quote(name))


__all__ = ["FILE_COLUMN", "column", "data_schema", "file_uri", "scan", "spark_schema"]
