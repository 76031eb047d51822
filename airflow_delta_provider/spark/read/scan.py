"""Read a snapshot's data files into a DataFrame.

The file list always comes from the log (never a directory listing): only
live files are read, and vacuumed or orphan files are never seen. Data files
hold the data columns only; partition columns are added from
``add.partitionValues`` as typed values, and a column an older file lacks
reads as null because the files are read with the table's data schema. A
file written before a column widened (``typeWidening``) reads as the
table's type the same way: Spark 4's parquet readers (vectorized or not)
convert every change the protocol allows, and so does the ``arrow`` source
(:mod:`.arrow_conform`), so no cast is added here.

Data files are read in one of two I/O modes
(:mod:`~airflow_delta_provider.spark.runtime.io_mode`): ``hadoop``, Spark's
own parquet reader through its Hadoop FileSystem; or ``arrow``, a Python
data source reading the files with pyarrow through the storage seam
(:mod:`.arrow_source`). Only the reader differs: the literal plan below is
the same in both (so Spark folds the same literals and a rewrite writes the
same files); where the file join would be used, the arrow source yields
each row's partition values and ``add.path`` itself and no join is needed.

Two plans are used:

- **literals**: one parquet read per partition, each with its partition
  values as literals. Best for unpartitioned tables and a few partitions.
- **file join**: one parquet read of every file, joined (broadcast) on
  Spark's ``_metadata.file_path`` to a small table of one row per file
  holding its ``add.path`` and typed partition values. Used when the caller
  wants each row's file (``with_file_path``) or the files span many
  partitions, where a union of many reads would be slow to plan.

A table may have a data column named ``_metadata`` or like a helper column
of this module: the file path is taken with ``DataFrame.metadataColumn``,
which no data column shadows, and helper columns get names no table column
has.

:func:`count_matches` is the touched-file scan of UPDATE and DELETE: per
file, how many rows match a condition. It reads only the condition's
columns and groups the matching rows by a long key per file (``arrow``: the
file's position, an int) before anything is mapped back to the log's paths,
so no row is joined on a string.

The reads themselves are in :mod:`.file_reads`, the names they need in
:mod:`.files`; this module only picks the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import DeltaError, InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.spark.read.file_reads import (
    literal_reads,
    match_frame,
    partition_groups,
    partition_values,
    read_arrow,
    read_with_metadata,
    union_all,
)
from airflow_delta_provider.spark.read.files import (
    KEY_COLUMN,
    URI_COLUMN,
    data_schema,
    empty_frame,
    file_keys,
    file_uri,
    free_name,
    hadoop_path,
    key_column,
    spark_schema,
    table_location,
)
from airflow_delta_provider.spark.read.row_tracking import read_with_row_tracking
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io

#: Default name of the column ``scan(..., with_file_path=True)`` adds: the file's ``add.path``.
FILE_COLUMN = "_file"


#: Above this many partitions, the file-join plan is used.
MAX_LITERAL_PARTITIONS = 16


def scan(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile] | None = None,
    *,
    with_file_path: bool = False,
    file_column: str = FILE_COLUMN,
    io: str = "auto",
    row_tracking: bool = False,
) -> DataFrame:
    """The rows of ``files`` (default: every live file of ``snapshot``).

    Columns are the table schema's, in table order; with ``with_file_path``
    a string column ``file_column`` (default ``_file``) follows, holding each
    row's ``add.path`` exactly as the log spells it. A ``file_column`` that
    names a table column (case-insensitively) is an InvalidInputError.
    ``io`` is the I/O mode (:mod:`~airflow_delta_provider.spark.runtime.io_mode`).
    With ``row_tracking`` (a table with row tracking enabled) a ``_metadata``
    struct of each row's ``row_id`` and ``row_commit_version`` follows instead
    (:func:`~.row_tracking.read_with_row_tracking`).
    """
    if row_tracking:
        if with_file_path:
            raise InvalidInputError("scan shows row tracking or the file path, not both")
        return read_with_row_tracking(spark, snapshot, files, io)
    files = list(snapshot.files if files is None else files)
    schema = snapshot.schema
    partition_columns = list(snapshot.partition_columns)
    table_struct = spark_schema(schema)
    taken = {f.name.lower() for f in table_struct.fields}
    if with_file_path and file_column.lower() in taken:
        raise InvalidInputError(
            f"file_column {file_column!r} is already a column of the table; pass another file_column"
        )
    columns = [F.col(quote_identifier(f.name)) for f in table_struct.fields]
    if with_file_path:
        columns.append(F.col(quote_identifier(file_column)))
    if not files:
        fields = list(table_struct.fields)
        if with_file_path:
            fields.append(StructField(file_column, StringType(), True))
        return empty_frame(spark, StructType(fields))

    groups = partition_groups(files)
    literal = not with_file_path and (not partition_columns or len(groups) <= MAX_LITERAL_PARTITIONS)
    location = table_location(snapshot)
    mode = resolve_io(spark, location, io)
    if literal:
        return union_all(literal_reads(spark, snapshot, groups, io=mode)).select(*columns)
    if mode == ARROW:
        named = file_column if with_file_path else None
        return read_arrow(spark, snapshot, files, file_column=named).select(*columns)

    read_schema = data_schema(schema, partition_columns)

    # File join: one read, each row matched to its file by Spark's own path.
    uri_column = free_name(URI_COLUMN, taken)
    absolute = [hadoop_path(location, f.path) for f in files]
    fields_by_name = {f.name.lower(): f for f in table_struct.fields}
    partition_struct = [(c, fields_by_name[c.lower()]) for c in partition_columns]
    lookup_schema = StructType(
        [StructField(uri_column, StringType(), False)]
        + ([StructField(file_column, StringType(), False)] if with_file_path else [])
        + [StructField(f.name, f.dataType, True) for _, f in partition_struct]
    )
    rows = []
    for f, path in zip(files, absolute):
        values = partition_values(snapshot, f, partition_columns)
        own = (f.path,) if with_file_path else ()
        rows.append((file_uri(path), *own, *(values[c] for c, _ in partition_struct)))
    lookup = spark.createDataFrame(rows, lookup_schema)
    data = read_with_metadata(spark, snapshot, location, read_schema, files, uri_column=uri_column)
    return data.join(F.broadcast(lookup), on=uri_column, how="inner").select(*columns)


def count_matches(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    condition: Column | None,
    io: str = "auto",
) -> dict[str, int]:
    """How many rows of each file match ``condition`` (None: every row),
    keyed by ``add.path``; files without a match are left out.

    This is the touched-file scan of UPDATE and DELETE, so it is kept cheap:

    - Spark reads only the columns ``condition`` references.
    - Matching rows are counted per file *key*: :func:`xxhash64` of Spark's
      ``_metadata.file_path``, a long being far cheaper to group by than the
      path string. One row per file comes back, and the driver maps each key
      to its file by hashing the URI :func:`file_uri` spells. Should two
      candidates share a key, the URI itself is the key: always exact.
    - Partition values come from the log, not the files. The per-partition
      reads carry them as literals; with many partitions, one read of the
      data columns serves unless the condition references a partition
      column, and only then is every row joined to its file
      (:func:`scan` with ``with_file_path``).
    - In ``arrow`` mode (``io``), one read yields the condition's columns and
      each row's file position, an int, which the count groups by.
    """
    files = list(files)
    if not files:
        return {}
    matched = F.lit(True) if condition is None else F.coalesce(condition, F.lit(False))
    partition_columns = list(snapshot.partition_columns)
    table_struct = spark_schema(snapshot.schema)
    taken = {f.name.lower() for f in table_struct.fields}
    location = table_location(snapshot)
    if resolve_io(spark, location, io) == ARROW:
        frame, key, _row, by_position = match_frame(spark, snapshot, files, condition, io)
        counts = frame.groupBy(quote_identifier(key)).count().collect()
        return {by_position[r[key]]: int(r["count"]) for r in counts}
    groups = partition_groups(files)
    if partition_columns and len(groups) > MAX_LITERAL_PARTITIONS:
        if _needs_columns_outside(spark, data_schema(snapshot.schema, partition_columns), matched):
            name = free_name(FILE_COLUMN, taken)
            frame = scan(spark, snapshot, files, with_file_path=True, file_column=name).filter(matched)
            return {r[name]: int(r["count"]) for r in frame.groupBy(quote_identifier(name)).count().collect()}
        groups, partition_columns = {(): files}, []  # data columns only: one read
    uri_column = free_name(URI_COLUMN, taken)
    reads = literal_reads(spark, snapshot, groups, uri_column=uri_column, partition_columns=partition_columns)
    rows = union_all([df.filter(matched).select(uri_column) for df in reads])

    by_key, hashed = file_keys({file_uri(hadoop_path(location, f.path)): f.path for f in files})
    counts = rows.groupBy(key_column(uri_column, hashed).alias(KEY_COLUMN)).count().collect()
    unknown = [r[KEY_COLUMN] for r in counts if r[KEY_COLUMN] not in by_key]
    if unknown:
        raise DeltaError(f"internal error: Spark read files that were not asked for (keys {unknown[:3]})")
    return {by_key[r[KEY_COLUMN]]: int(r["count"]) for r in counts}


def _needs_columns_outside(spark: SparkSession, struct: StructType, condition: Column) -> bool:
    """Whether ``condition`` references a column ``struct`` lacks, decided by
    Spark's own analyzer over an empty frame (no job runs)."""
    try:
        _ = empty_frame(spark, struct).filter(condition).schema  # analysis only
    except AnalysisException:
        return True
    return False


__all__ = ["FILE_COLUMN", "MAX_LITERAL_PARTITIONS", "count_matches", "scan"]
