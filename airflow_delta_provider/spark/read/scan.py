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

Data files are read in one of two I/O modes (:mod:`.io_mode`): ``hadoop``,
Spark's own parquet reader through its Hadoop FileSystem; or ``arrow``, a
Python data source reading the files with pyarrow through the storage seam
(:mod:`.arrow_scan`). Only the reader differs: the literal plan below is
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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType, TimestampNTZType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.table_features.column_mapping import ID
from airflow_delta_provider.delta.errors import DeltaError, InvalidInputError
from airflow_delta_provider.delta.partitions import (
    encode_path,
    parse_partition_values,
    to_absolute,
)
from airflow_delta_provider.delta.storage import TableLocation, parse_location
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io
from airflow_delta_provider.spark.runtime.session import is_connect

#: Default name of the column ``scan(..., with_file_path=True)`` adds: the file's ``add.path``.
FILE_COLUMN = "_file"
# Base names of helper columns; free_name picks one no table column has.
_URI_COLUMN = "__delta_file_uri"
_KEY_COLUMN = "__delta_file_key"
_ROW_INDEX_COLUMN = "__delta_row_index"
#: Above this many partitions, the file-join plan is used.
MAX_LITERAL_PARTITIONS = 16
_FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"


def spark_schema(schema: dict[str, Any]) -> StructType:
    """A Spark StructType from Delta schema JSON (the two share one JSON form)."""
    return StructType.fromJson(schema)


def data_schema(schema: dict[str, Any], partition_columns: Iterable[str]) -> StructType:
    """The table schema without its partition columns: what data files hold."""
    excluded = {c.lower() for c in partition_columns}
    return StructType([f for f in spark_schema(schema).fields if f.name.lower() not in excluded])


def file_uri(absolute_path: str) -> str:
    """How Spark spells a file in ``_metadata.file_path``: a URI quoted like
    ``java.net.URI`` (which is what ``encode_path`` mimics); ``file:`` for a
    local path. ``absolute_path`` is decoded (a path, or a Spark URI such as
    ``s3a://bucket/key``)."""
    scheme, sep, rest = absolute_path.partition("://")
    if sep:
        authority, slash, path = rest.partition("/")
        return f"{scheme}://{authority}{encode_path(slash + path)}"
    return "file:" + encode_path(absolute_path)


def table_location(snapshot: Any) -> TableLocation:
    """Where a snapshot's table lives (its storage's location, which keeps
    an Azure account the canonical root drops)."""
    storage = getattr(getattr(snapshot, "log_store", None), "storage", None)
    location = getattr(storage, "location", None)
    return location if isinstance(location, TableLocation) else parse_location(snapshot.table_root)


def hadoop_path(location: TableLocation, add_path: str) -> str:
    """The decoded absolute path of a data file as Spark's Hadoop FileSystem
    names it: a local path, or ``s3a://``, ``abfss://``, ``gs://``."""
    absolute = to_absolute(location.uri, add_path)
    if location.is_local:
        return absolute
    rel = location.relative(absolute)
    if rel is not None:
        return f"{location.spark_uri().rstrip('/')}/{rel}"
    return parse_location(absolute).spark_uri()


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
    ``io`` is the I/O mode (:mod:`.io_mode`). With ``row_tracking`` (a table
    with row tracking enabled) a ``_metadata`` struct of each row's
    ``row_id`` and ``row_commit_version`` follows instead
    (:func:`~.row_tracking.read_with_row_tracking`).
    """
    if row_tracking:
        if with_file_path:
            raise InvalidInputError("scan shows row tracking or the file path, not both")
        from airflow_delta_provider.spark.read.row_tracking import read_with_row_tracking

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
    columns = [F.col(_quote(f.name)) for f in table_struct.fields]
    if with_file_path:
        columns.append(F.col(_quote(file_column)))
    if not files:
        fields = list(table_struct.fields)
        if with_file_path:
            fields.append(StructField(file_column, StringType(), True))
        return spark.createDataFrame([], StructType(fields))

    groups = _partition_groups(files)
    literal = not with_file_path and (not partition_columns or len(groups) <= MAX_LITERAL_PARTITIONS)
    location = table_location(snapshot)
    mode = resolve_io(spark, location, io)
    if literal:
        return _union(_literal_reads(spark, snapshot, groups, io=mode)).select(*columns)
    if mode == ARROW:
        named = file_column if with_file_path else None
        return _arrow_read(spark, snapshot, files, file_column=named).select(*columns)

    read_schema = data_schema(schema, partition_columns)

    # File join: one read, each row matched to its file by Spark's own path.
    uri_column = free_name(_URI_COLUMN, taken)
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
        values = _partition_values(snapshot, f, partition_columns)
        own = (f.path,) if with_file_path else ()
        rows.append((file_uri(path), *own, *(values[c] for c, _ in partition_struct)))
    lookup = spark.createDataFrame(rows, lookup_schema)
    data = _read_with_metadata(spark, snapshot, location, read_schema, files, uri_column=uri_column)
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
        counts = frame.groupBy(_quote(key)).count().collect()
        return {by_position[r[key]]: int(r["count"]) for r in counts}
    groups = _partition_groups(files)
    if partition_columns and len(groups) > MAX_LITERAL_PARTITIONS:
        if _needs_columns_outside(spark, data_schema(snapshot.schema, partition_columns), matched):
            name = free_name(FILE_COLUMN, taken)
            frame = scan(spark, snapshot, files, with_file_path=True, file_column=name).filter(matched)
            return {r[name]: int(r["count"]) for r in frame.groupBy(_quote(name)).count().collect()}
        groups, partition_columns = {(): files}, []  # data columns only: one read
    uri_column = free_name(_URI_COLUMN, taken)
    reads = _literal_reads(spark, snapshot, groups, uri_column=uri_column, partition_columns=partition_columns)
    rows = _union([df.filter(matched).select(uri_column) for df in reads])

    by_key, hashed = file_keys({file_uri(hadoop_path(location, f.path)): f.path for f in files})
    counts = rows.groupBy(key_column(uri_column, hashed).alias(_KEY_COLUMN)).count().collect()
    unknown = [r[_KEY_COLUMN] for r in counts if r[_KEY_COLUMN] not in by_key]
    if unknown:
        raise DeltaError(f"internal error: Spark read files that were not asked for (keys {unknown[:3]})")
    return {by_key[r[_KEY_COLUMN]]: int(r["count"]) for r in counts}


def _referenced_columns(spark: SparkSession, struct: StructType, condition: Column) -> list[str] | None:
    """The top-level columns of ``struct`` that ``condition`` reads, from
    Spark's analyzer over an empty frame (no job runs); None when unknown,
    as over Spark Connect, where the analyzed plan stays on the server."""
    if is_connect(spark):
        return None
    from py4j.protocol import Py4JError

    try:
        plan = spark.createDataFrame([], struct).filter(condition)._jdf.queryExecution().analyzed()
        names = set()
        refs = plan.references().iterator()
        while refs.hasNext():
            names.add(refs.next().name())
    except (AnalysisException, Py4JError, AttributeError):
        return None
    return [f.name for f in struct.fields if f.name in names]


def file_keys(uris: dict[str, str]) -> tuple[dict[Any, str], bool]:
    """``{key: add.path}`` for ``{Spark file URI: add.path}``, and whether the
    key is the ``xxhash64`` of the URI (True) or, when two URIs share a hash,
    the URI itself (False)."""
    hashed = {xxhash64(uri): path for uri, path in uris.items()}
    if len(hashed) == len(uris):
        return hashed, True
    return dict(uris), False


def key_column(uri_column: str, hashed: bool) -> Column:
    return F.xxhash64(F.col(uri_column)) if hashed else F.col(uri_column)


_MASK = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def xxhash64(text: str, seed: int = 42) -> int:
    """Spark's ``xxhash64(text)`` (XXH64 of the UTF-8 bytes, seed 42, as a
    signed long), computed in the driver to name files by their key."""
    data = text.encode("utf-8")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
        while i + 32 <= n:
            for j in range(4):
                v[j] = _round(v[j], int.from_bytes(data[i + 8 * j : i + 8 * j + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for lane in v:
            h = ((h ^ _round(0, lane)) * _P1 + _P4) & _MASK
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, int.from_bytes(data[i : i + 8], "little")), 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ (int.from_bytes(data[i : i + 4], "little") * _P1 & _MASK), 23) * _P2 + _P3) & _MASK
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * _P5 & _MASK), 11) * _P1) & _MASK
        i += 1
    h = ((h ^ (h >> 33)) * _P2) & _MASK
    h = ((h ^ (h >> 29)) * _P3) & _MASK
    h ^= h >> 32
    return h - (1 << 64) if h >= 1 << 63 else h


#: Spark lists 32+ input paths with a distributed job (about 0.2 s); see read_files.
_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_files(spark: SparkSession, schema: StructType, paths: Sequence[str]) -> DataFrame:
    """A parquet read of exactly ``paths`` (absolute), with ``schema``.

    The paths come from the log, so each names one existing file and nothing
    is there to discover. Spark would still list 32 or more paths with a
    Spark job of its own; for local files a ``stat`` each in the driver is
    far cheaper, so the threshold is lifted while the read is set up (the
    listing happens here, not when the frame runs). Remote paths keep
    Spark's parallel listing.
    """
    if any("://" in p for p in paths):
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
            df = _arrow_read(spark, snapshot, group, columns=read_schema.names, extra_columns=extra_columns)
        else:
            df = _read_with_metadata(
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
            values = _partition_values(snapshot, group[0], wanted)
            df = df.withColumns({c: _partition_literal(v, by_type[c.lower()]) for c, v in values.items()})
        parts.append(df)
    return parts


def _read_with_metadata(
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
    uri_name = uri_column or free_name(_URI_COLUMN, taken)
    row_name = row_index_column or free_name(_ROW_INDEX_COLUMN, taken)
    metadata = df.metadataColumn("_metadata")
    df = df.withColumns({uri_name: metadata.getField("file_path"), row_name: metadata.getField("row_index")})
    if marked:
        from airflow_delta_provider.spark.read.deletion_vectors import drop_deleted_rows

        uris = {file_uri(p): f.path for p, f in zip(paths, files)}
        df = drop_deleted_rows(df, uri_name, row_name, files, uris, snapshot)
    helpers = [n for n, asked in ((uri_name, uri_column), (row_name, row_index_column)) if asked is None]
    df = df.drop(*helpers) if helpers else df
    return to_logical(df, physical, read_schema)


def physical_struct(snapshot: Any, logical: StructType) -> StructType:
    """The fields of ``logical`` (a selection of the table's columns) as the
    data files hold them: under column mapping, physical names and, in
    ``id`` mode, ``parquet.field.id`` metadata at every level. Without
    mapping, ``logical`` itself."""
    mapping = snapshot.column_mapping
    if not mapping.enabled:
        return logical
    physical = spark_schema(mapping.physical_schema())
    by_logical = {f.name.lower(): p for f, p in zip(spark_schema(snapshot.schema).fields, physical.fields)}
    return StructType([by_logical[f.name.lower()] for f in logical.fields])


def to_logical(df: DataFrame, physical: StructType, logical: StructType) -> DataFrame:
    """``df``'s columns of ``physical`` renamed (and nested fields relabelled,
    by a cast between structs of the same shape) to ``logical``; its other
    columns pass through."""
    if physical is logical:
        return df
    renamed = {p.name: column(p.name).cast(f.dataType).alias(f.name) for p, f in zip(physical.fields, logical.fields)}
    return df.select(*[renamed.get(name, column(name)) for name in df.columns])


def _arrow_read(
    spark: SparkSession,
    snapshot: Any,
    files: Sequence[AddFile],
    *,
    columns: Sequence[str] | None = None,
    extra_columns: Sequence[str] = (),
    **named: Any,
) -> DataFrame:
    """:func:`~.arrow_scan.arrow_read` of ``files`` by logical column names
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


def _partition_values(snapshot: Any, add: AddFile, columns: Sequence[str]) -> dict[str, Any]:
    """Typed partition values of ``add`` for (logical) ``columns``."""
    raw = snapshot.column_mapping.logical_partition_values(add.partition_values, columns)
    return parse_partition_values(raw, snapshot.schema, columns)


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
    key_name, row_name = free_name(_KEY_COLUMN, taken), free_name(_ROW_INDEX_COLUMN, taken)
    extra_columns = list(extra_columns) if with_data else []
    data = [column(n) for n in (*table_struct.names, *extra_columns)] if with_data else []
    location = table_location(snapshot)
    if resolve_io(spark, location, io) == ARROW:
        frame = _arrow_read(
            spark,
            snapshot,
            files,
            columns=None if with_data else _referenced_columns(spark, table_struct, matched),
            extra_columns=extra_columns,
            index_column=key_name,
            row_index_column=row_name,
        )
        by_position: dict[Any, str] = {i: f.path for i, f in enumerate(files)}
        kept = [*data, _quote(key_name), _quote(row_name)]
        return frame.filter(matched).select(*kept), key_name, row_name, by_position
    uri_column = free_name(_URI_COLUMN, taken)
    groups = _partition_groups(files)
    reads = _literal_reads(
        spark, snapshot, groups, uri_column=uri_column, row_index_column=row_name, extra_columns=extra_columns
    )
    uris = {file_uri(hadoop_path(location, f.path)): f.path for f in files}
    if uri_keys:
        by_key, key = uris, F.col(uri_column).alias(key_name)
    else:
        by_key, hashed = file_keys(uris)
        key = key_column(uri_column, hashed).alias(key_name)
    frame = _union([df.filter(matched).select(*data, key, _quote(row_name)) for df in reads])
    return frame, key_name, row_name, by_key


def free_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_<n>``, whichever first is not in ``taken`` (lower-case names)."""
    name, n = base, 0
    while name.lower() in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _needs_columns_outside(spark: SparkSession, struct: StructType, condition: Column) -> bool:
    """Whether ``condition`` references a column ``struct`` lacks, decided by
    Spark's own analyzer over an empty frame (no job runs)."""
    try:
        _ = spark.createDataFrame([], struct).filter(condition).schema  # analysis only
    except AnalysisException:
        return True
    return False


def _partition_literal(value: Any, dtype: DataType) -> Column:
    """A typed partition value as a literal of ``dtype``.

    A ``timestamp_ntz`` value (a naive datetime) goes as its text: PySpark
    turns a naive datetime into an instant in the driver's local time zone,
    which would shift the value unless that zone is the session's.
    """
    if isinstance(dtype, TimestampNTZType) and value is not None:
        return F.lit(value.isoformat(sep=" ")).cast(dtype)
    return F.lit(value).cast(dtype)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """A column reference safe for any name (dots, spaces)."""
    return F.col(_quote(name))


__all__ = [
    "FILE_COLUMN",
    "column",
    "count_matches",
    "free_name",
    "data_schema",
    "file_keys",
    "file_uri",
    "hadoop_path",
    "key_column",
    "match_frame",
    "physical_struct",
    "read_files",
    "scan",
    "spark_schema",
    "table_location",
    "to_logical",
]
