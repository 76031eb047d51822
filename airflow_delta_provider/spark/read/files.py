"""A snapshot's data files as Spark sees them, and the names that reading them needs.

- **Schemas**: Delta schema JSON as a Spark ``StructType`` (:func:`spark_schema`,
  :func:`data_schema`), and the physical fields of a selection under column
  mapping (:func:`physical_struct`, :func:`to_logical`).
- **Where a file is**: the table's location (:func:`table_location`), a
  file's path as Spark's Hadoop FileSystem names it (:func:`hadoop_path`)
  and as ``_metadata.file_path`` spells it (:func:`file_uri`).
- **Which file a row came from**: a long key per file, Spark's
  ``xxhash64`` of its URI (:func:`file_keys`, :func:`key_column`,
  :func:`xxhash64`), cheaper to group and join on than the path.
- **Column names**: a reference safe for any name (:func:`column`) and a
  helper column name no table column has (:func:`free_name`).

This is the bottom of :mod:`airflow_delta_provider.spark.read`: it imports
no other module of the engine but the session's kind (:mod:`..runtime.session`), and the reads (:mod:`.file_reads`), the
deletion-vector filter (:mod:`.deletion_vectors`), row tracking and the scan
build on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.partitions import encode_path, file_location, to_absolute
from airflow_delta_provider.delta.storage import TableLocation, parse_location
from airflow_delta_provider.spark.runtime.session import is_connect

# Base names of helper columns; free_name picks one no table column has.
URI_COLUMN = "__delta_file_uri"
KEY_COLUMN = "__delta_file_key"
ROW_INDEX_COLUMN = "__delta_row_index"


def spark_schema(schema: Mapping[str, Any]) -> StructType:
    """A Spark StructType from Delta schema JSON (the two share one JSON form)."""
    return StructType.fromJson(dict(schema))


def empty_frame(spark: Any, schema: StructType | Mapping[str, Any]) -> DataFrame:
    """A DataFrame with ``schema`` (a StructType, or Delta schema JSON) and no
    rows: for analysis (what a condition resolves to), or an empty result.

    On a classic session it is made in the JVM from the schema's JSON, with no
    RDD behind it: ``createDataFrame([], schema)`` ships an empty RDD through
    Py4J, about 30 ms that every command paid once or more per condition.
    """
    struct = schema if isinstance(schema, StructType) else spark_schema(schema)
    if is_connect(spark):
        return spark.createDataFrame([], struct)  # a local relation, built in this process
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    session = spark._jsparkSession
    rows = session.createDataFrame(spark._jvm.java.util.ArrayList(), session.parseDataType(struct.json()))
    return ClassicDataFrame(rows, spark)


def data_schema(schema: dict[str, Any], partition_columns: Iterable[str]) -> StructType:
    """The table schema without its partition columns: what data files hold."""
    excluded = {c.lower() for c in partition_columns}
    return StructType([f for f in spark_schema(schema).fields if f.name.lower() not in excluded])


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
    if location.is_local:
        return to_absolute(location.uri, add_path)
    file = file_location(location, add_path)  # decoded once, never parsed again
    rel = location.relative(file)
    if rel is not None:
        return f"{location.spark_uri().rstrip('/')}/{rel}"
    return file.spark_uri()


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


def free_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_<n>``, whichever first is not in ``taken`` (lower-case names)."""
    name, n = base, 0
    while name.lower() in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def column(name: str) -> Column:
    """A column reference safe for any name (dots, spaces)."""
    return F.col(quote_identifier(name))


__all__ = [
    "KEY_COLUMN",
    "ROW_INDEX_COLUMN",
    "URI_COLUMN",
    "column",
    "data_schema",
    "file_keys",
    "file_uri",
    "free_name",
    "hadoop_path",
    "key_column",
    "physical_struct",
    "spark_schema",
    "table_location",
    "to_logical",
    "xxhash64",
]
