"""Scans in ``arrow`` mode: a table's data files read by pyarrow in the executors.

Spark 4's Python Data Source API (:class:`DeltaArrowSource`) stands in for
Spark's parquet reader, so no Hadoop connector is needed: each task opens
the table's store with :func:`~airflow_delta_provider.delta.storage.open_storage`
(credentials from the worker's environment, see :mod:`~airflow_delta_provider.spark.runtime.worker_env`), reads
its files with pyarrow and yields Arrow record batches of exactly the
declared schema.

What the driver decides and sends in the one ``plan`` option (JSON; no
secret is ever in it): the table root, the output columns and what each is,
the files (path relative to the root, ``add.path``, partition values) and
how they are grouped into input partitions (:func:`plan_splits`, Spark's own
rule for parquet). An output column is one of

- ``data``: read from the file by name (case-insensitively; a column the
  file lacks is null), projected: other columns are never decoded;
- ``partition``: the file's partition value, a typed constant;
- ``path``: the file's ``add.path`` (a Python data source has no ``_metadata``);
- ``index``: the file's position in the plan's list, an int, which is far
  cheaper to group by than a path (``count_matches``);
- ``row_index``: the row's position in its parquet file, a long (what a
  deletion vector names).

Rows a file's deletion vector deletes are left out: each task decodes the
vectors of its own files (the descriptor travels in the plan) and filters
every batch by its rows' indexes.

A Python data source cannot prune columns itself, so the caller names the
columns it needs (``columns``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import encode_path, relative_to_root, to_absolute
from airflow_delta_provider.delta.schema.types import as_nullable
from airflow_delta_provider.delta.storage import TableLocation
from airflow_delta_provider.delta.table_properties import parse_byte_size
from airflow_delta_provider.spark.runtime.session import is_connect
from airflow_delta_provider.spark.runtime.worker_env import forward_store_env

SOURCE_NAME = "delta_arrow_files"
#: Rows per batch a task yields.
READ_BATCH_ROWS = 65536
_DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
_DEFAULT_OPEN_COST = 4 * 1024 * 1024

DATA, PARTITION, PATH, INDEX, ROW_INDEX = "data", "partition", "path", "index", "row_index"


def arrow_read(
    spark: SparkSession,
    location: TableLocation,
    schema: dict[str, Any],
    partition_columns: Sequence[str],
    files: Sequence[AddFile],
    *,
    columns: Sequence[str] | None = None,
    file_column: str | None = None,
    index_column: str | None = None,
    row_index_column: str | None = None,
) -> DataFrame:
    """The live rows of ``files`` of the table at ``location`` with ``schema``.

    Columns: ``columns`` (default every table column, in table order), then
    ``file_column`` (each row's ``add.path``), ``index_column`` (each row's
    file position in ``files``) and ``row_index_column`` (its row index in
    the file) when named. Every column is nullable, as Spark's file sources
    read them, except those three, which never are null.
    """
    table = _spark_struct(as_nullable(schema))
    by_name = {f.name.lower(): f for f in table.fields}
    partition_types = {c.lower(): _field_type(schema, c) for c in partition_columns}
    wanted = [f.name for f in table.fields] if columns is None else list(columns)
    out_fields: list[StructField] = []
    out_columns: list[list[Any]] = []
    for name in wanted:
        field = by_name[name.lower()]
        if field.name.lower() in partition_types:
            out_columns.append([field.name, PARTITION, partition_types[field.name.lower()]])
        else:
            out_columns.append([field.name, DATA, None])
        out_fields.append(field)
    if file_column is not None:
        out_fields.append(StructField(file_column, StringType(), False))
        out_columns.append([file_column, PATH, None])
    if index_column is not None:
        out_fields.append(StructField(index_column, IntegerType(), False))
        out_columns.append([index_column, INDEX, None])
    if row_index_column is not None:
        out_fields.append(StructField(row_index_column, LongType(), False))
        out_columns.append([row_index_column, ROW_INDEX, None])

    entries = []
    for f in files:
        rel = relative_to_root(location, f.path)
        entries.append(
            [
                rel,
                None if rel is not None else to_absolute(location.uri, f.path),
                f.path,
                [_partition_value(f, name) if role == PARTITION else None for name, role, _ in out_columns],
                f.deletion_vector.to_json() if f.deletion_vector is not None else None,
            ]
        )
    plan = {
        "root": worker_root(location),
        "schema": StructType(out_fields).jsonValue(),
        "columns": out_columns,
        "files": entries,
        "splits": plan_splits([f.size or 0 for f in files], **_split_settings(spark)),
    }
    _register(spark)
    return spark.read.format(SOURCE_NAME).option("plan", json.dumps(plan)).load()


def arrow_read_parquet(
    spark: SparkSession, location: TableLocation, storage_options: Mapping[str, str] | None = None
) -> DataFrame:
    """The rows of a parquet file, or of a flat folder of parquet files, on a
    store (names starting with ``_`` or ``.`` are skipped, as Spark does).

    The schema is the first file's, as Spark's parquet source takes it.
    Sub-folders (Hive partitions) are not discovered: an InvalidInputError.
    ``storage_options`` reach the store from this process (the listing and
    the schema); the executors read the files with their own environment.
    """
    import pyarrow.parquet as pq

    from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
    from airflow_delta_provider.delta.storage import open_storage, parse_location

    storage = open_storage(location, storage_options)
    listed = [m for m in storage.list_tree("") if not m.is_dir and not _hidden(m.path)]
    if not listed and "/" in location.uri.split("://", 1)[-1]:
        parent, name = worker_root(location).rsplit("/", 1)
        storage = open_storage(parent, storage_options)
        try:
            listed = [storage.head(name)]
        except FileNotFoundError:
            listed = []
        location = parse_location(parent)
    if not listed:
        raise InvalidInputError(f"no parquet file at {location.uri}")
    nested = sorted(m.path for m in listed if "/" in m.path)
    if nested:
        raise InvalidInputError(
            f"the parquet source {location.uri} has sub-folders ({nested[0]}, ...); io=arrow reads a "
            "file or a flat folder of files (no partition discovery)"
        )
    listed.sort(key=lambda m: m.path)
    with storage.open_input_file(listed[0].path) as f:
        arrow_schema = pq.ParquetFile(f).schema_arrow
    _refuse_variants(arrow_schema, location.uri)
    schema = from_arrow_schema(arrow_schema, metadata=False)
    files = [AddFile(encode_path(m.path), {}, m.size, m.mtime_ms, data_change=False) for m in listed]
    return arrow_read(spark, location, schema, [], files)


#: Where Spark keeps a parquet file's Spark schema (in Delta's JSON form).
_SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"


def _refuse_variants(arrow_schema: Any, uri: str) -> None:
    """Refuse a parquet source whose Spark schema has variant columns.

    Arrow has no variant type: pyarrow reads one as its physical struct
    (shredded or not), which would reach the table as a struct. Spark's
    parquet reader (``io=hadoop``) reads it as a variant.
    """
    from airflow_delta_provider.delta.schema.fields import uses_type
    from airflow_delta_provider.delta.schema.types import VARIANT

    raw = (arrow_schema.metadata or {}).get(_SPARK_ROW_METADATA)
    try:
        fields = json.loads(raw)["fields"] if raw else []
        names = [f["name"] for f in fields if uses_type(f["type"], VARIANT)]
    except (ValueError, KeyError, TypeError, InvalidInputError):
        return  # not a Spark schema we understand: no variant is known
    if names:
        raise InvalidInputError(
            f"the parquet source {uri} has variant column(s) {', '.join(names)}, which io=arrow would read "
            "as plain structs; use io=hadoop"
        )


def _hidden(path: str) -> bool:
    return any(part.startswith(("_", ".")) for part in path.split("/"))


def _register(spark: SparkSession) -> None:
    """Register :class:`DeltaArrowSource` with the workers' current environment.

    A registration carries the environment and Python of its moment
    (:mod:`~airflow_delta_provider.spark.runtime.worker_env`), so it is renewed whenever either changed.
    """
    forward_store_env(spark)
    if is_connect(spark):  # the server's workers: one registration per session
        key: Any = "connect"
    else:
        sc = spark.sparkContext
        key = (sc.pythonExec, tuple(sorted(sc.environment.items())))
    if getattr(spark, "_delta_arrow_source", None) != key:
        spark.dataSource.register(DeltaArrowSource)
        spark._delta_arrow_source = key  # type: ignore[attr-defined]  # a per-session mark, kept on the session


def plan_splits(
    sizes: Sequence[int],
    parallelism: int,
    max_partition_bytes: int = _DEFAULT_MAX_PARTITION_BYTES,
    open_cost: int = _DEFAULT_OPEN_COST,
) -> list[list[list[Any]]]:
    """Files (by position) cut and grouped into input partitions by Spark's
    rule for parquet (``FilePartition``): the split size is
    ``min(maxPartitionBytes, max(openCost, total / parallelism))``, each file
    counted with an open cost; a larger file is cut into pieces of that size;
    the pieces, largest first, are packed up to it. The same files give
    Spark's parquet reader and this source the same tasks, so a rewrite
    writes the same files in both I/O modes.

    Each piece is ``[position, start, length]``, length None for a whole file.
    """
    if not sizes:
        return []
    total = sum(s + open_cost for s in sizes)
    max_split = min(max_partition_bytes, max(open_cost, total // max(1, parallelism)))
    pieces: list[tuple[int, int, int | None, int]] = []  # (position, start, length or None, bytes)
    for i, size in enumerate(sizes):
        if size <= max_split:
            pieces.append((i, 0, None, size))
            continue
        for start in range(0, size, max_split):
            piece = min(max_split, size - start)
            pieces.append((i, start, piece, piece))
    pieces.sort(key=lambda p: -p[3])  # stable, as Scala's sortBy
    splits: list[list[list[Any]]] = []
    current: list[list[Any]] = []
    current_size = 0
    for i, start, length, size in pieces:
        if current and current_size + size > max_split:
            splits.append(current)
            current, current_size = [], 0
        current.append([i, start, length])
        current_size += size + open_cost
    splits.append(current)
    return splits


def _split_settings(spark: SparkSession) -> dict[str, int]:
    """Spark's file-source split settings of this session."""
    if is_connect(spark):
        return _connect_split_settings(spark)
    settings = {
        "parallelism": spark.sparkContext.defaultParallelism,
        "max_partition_bytes": _DEFAULT_MAX_PARTITION_BYTES,
        "open_cost": _DEFAULT_OPEN_COST,
    }
    from py4j.protocol import Py4JError

    try:
        conf = spark._jsparkSession.sessionState().conf()
        settings["max_partition_bytes"] = int(conf.filesMaxPartitionBytes())
        settings["open_cost"] = int(conf.filesOpenCostInBytes())
        minimum = conf.filesMinPartitionNum()
        if minimum.isDefined():
            settings["parallelism"] = int(minimum.get())
        else:
            settings["parallelism"] = int(spark._jsparkSession.leafNodeDefaultParallelism())
    except (Py4JError, AttributeError):  # no JVM (Spark Connect): Spark's defaults
        pass
    return settings


def _connect_split_settings(spark: SparkSession) -> dict[str, int]:
    """:func:`_split_settings` over Spark Connect, from the session's settings.

    The default parallelism is not a setting the client can read; a
    ``range`` without a slice count is cut into exactly that many
    partitions, so one tiny job counts them (once per session).
    """
    settings = {
        "max_partition_bytes": parse_byte_size(spark.conf.get("spark.sql.files.maxPartitionBytes", None))
        or _DEFAULT_MAX_PARTITION_BYTES,
        "open_cost": parse_byte_size(spark.conf.get("spark.sql.files.openCostInBytes", None)) or _DEFAULT_OPEN_COST,
    }
    minimum = spark.conf.get("spark.sql.files.minPartitionNum", None)
    parallelism = getattr(spark, "_delta_parallelism", None)
    if minimum:
        parallelism = int(minimum)
    elif parallelism is None:
        parallelism = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).distinct().count()
        spark._delta_parallelism = parallelism  # type: ignore[attr-defined]  # a per-session cache, kept on the session
    settings["parallelism"] = max(1, int(parallelism))
    return settings


def _partition_value(f: AddFile, column: str) -> str | None:
    """A file's serialized partition value of ``column`` (matched case-insensitively); "" is null."""
    value = f.partition_values.get(column)
    if value is None:
        value = next((v for k, v in f.partition_values.items() if k.lower() == column.lower()), None)
    return value or None


def worker_root(location: TableLocation) -> str:
    """How a task names the table root to ``open_storage``: a spelling that
    parses back to the same location (an Azure account survives only in the
    ``abfss://`` form)."""
    return location.spark_uri() if location.account else location.uri


def _field_type(schema: dict[str, Any], column: str) -> str:
    for f in schema.get("fields", ()):
        if f["name"].lower() == column.lower():
            return f["type"]
    raise KeyError(column)


def _spark_struct(schema: dict[str, Any]) -> StructType:
    return StructType.fromJson(schema)


# --- the data source (runs in Python workers) ----------------------------------------


class DeltaArrowSource(DataSource):
    """Reads the files of a ``plan`` (see the module docstring) with pyarrow."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.options["plan"])["schema"])

    def reader(self, schema: StructType) -> DeltaArrowReader:
        plan = json.loads(self.options["plan"])
        # Spark pickles this source and the reader into every task, while
        # each file belongs to one partition only: the list stays here.
        self.options["plan"] = json.dumps({**plan, "files": []})
        return DeltaArrowReader(plan)


class DeltaArrowReader(DataSourceReader):
    def __init__(self, plan: dict[str, Any]) -> None:
        self.root: str = plan["root"]
        self.schema: dict[str, Any] = plan["schema"]
        self.columns: list[list[Any]] = plan["columns"]
        self._files: list[list[Any]] | None = plan["files"]
        self._splits: list[list[list[Any]]] = plan["splits"]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_files"] = None  # partitions carry their own files
        return state

    def partitions(self) -> list[InputPartition]:
        files = self._files or []
        return [InputPartition([[i, *files[i], start, length] for i, start, length in split]) for split in self._splits]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_entries(self.root, self.schema, self.columns, partition.value)


def read_entries(
    root: str, schema: dict[str, Any], columns: list[list[Any]], entries: list[list[Any]]
) -> Iterator[Any]:
    """Arrow batches of the output ``schema`` from the files of one partition."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader
    from airflow_delta_provider.delta.actions.model import DeletionVector
    from airflow_delta_provider.delta.partitions import file_storage, parse_partition_value
    from airflow_delta_provider.delta.storage import open_storage
    from airflow_delta_provider.spark.read.arrow_conform import conform_array, constant, relabel_by_field_id, wanted_id

    target = to_arrow_schema(StructType.fromJson(schema), timezone="UTC")
    data = [(pos, name) for pos, (name, role, _) in enumerate(columns) if role == DATA]
    fields = schema["fields"]
    # Column mapping id mode: the plan's fields carry the ids to match by.
    ids = [wanted_id(fields[pos]) for pos, _ in data]
    by_id = any(i is not None for i in ids)
    row_index_at = next((pos for pos, (_n, role, _t) in enumerate(columns) if role == ROW_INDEX), None)
    storage = open_storage(root)
    vectors = DeletionVectorReader(storage)
    for index, rel, _absolute, add_path, values, dv, start, length in entries:
        fixed: dict[int, Any] = {}
        for pos, (_name, role, delta_type) in enumerate(columns):
            if role == PARTITION:
                fixed[pos] = parse_partition_value(values[pos], delta_type)
            elif role == PATH:
                fixed[pos] = add_path
            elif role == INDEX:
                fixed[pos] = index
        deleted = None
        descriptor = DeletionVector.from_json(dv)  # dv: add.deletion_vector.to_json(), or None
        if descriptor is not None:
            deleted = np.frombuffer(vectors.read(descriptor, add_path).to_array(), np.uint64)
        source = storage
        if rel is None:  # a file outside the table root, named by an absolute URI
            source, rel = file_storage(storage, add_path)
        with source.open_input_file(rel) as f:
            for first_row, rows, found in _file_batches(f, [name for _, name in data], start, length, ids):
                arrays: list[pa.Array] = [None] * len(columns)
                for (pos, _name), array in zip(data, found):
                    field_type = target.field(pos).type
                    if array is None:
                        arrays[pos] = pa.nulls(rows, field_type)
                        continue
                    if by_id:
                        array = relabel_by_field_id(array, fields[pos]["type"])
                    arrays[pos] = conform_array(array, field_type)
                for pos, value in fixed.items():
                    arrays[pos] = constant(value, target.field(pos).type, rows)
                if row_index_at is not None:
                    arrays[row_index_at] = pa.array(np.arange(first_row, first_row + rows, dtype=np.int64))
                batch = pa.RecordBatch.from_arrays(arrays, schema=target)
                if deleted is not None:
                    batch = _live_rows(batch, deleted, first_row)
                if batch.num_rows:
                    yield batch


def _live_rows(batch: Any, deleted: Any, first_row: int) -> Any:
    """``batch`` (rows ``first_row`` onwards of its file) without the rows in
    ``deleted`` (sorted row indexes)."""
    bounds = np.array([first_row, first_row + batch.num_rows], dtype=np.uint64)
    lo, hi = np.searchsorted(deleted, bounds)
    if lo == hi:
        return batch
    keep = np.ones(batch.num_rows, dtype=bool)
    keep[(deleted[lo:hi] - np.uint64(first_row)).astype(np.int64)] = False
    return batch.filter(keep)


def _file_batches(
    f: Any, wanted: list[str], start: int, length: int | None, ids: list[int | None] | None = None
) -> Iterator[tuple[int, int, list[Any]]]:
    """(first row index, rows, the wanted columns' arrays, None for a column
    the file lacks) per batch of a file piece. Only the wanted columns are
    decoded; with none, only the row counts are read. A column with a field
    id in ``ids`` is found by that id (column mapping ``id`` mode), else by
    name."""
    import pyarrow.parquet as pq

    from airflow_delta_provider.spark.read.arrow_conform import field_id, match_columns

    pf = pq.ParquetFile(f, coerce_int96_timestamp_unit="us")
    metadata = pf.metadata
    groups = _row_groups(metadata, start, length)
    found = match_columns(pf.schema_arrow.names, wanted)
    if ids and any(i is not None for i in ids):
        by_id = {field_id(field): field.name for field in pf.schema_arrow if field_id(field) is not None}
        found = [by_id.get(i) if i is not None else name for i, name in zip(ids, found)]
    read = sorted({c for c in found if c is not None})
    firsts = np.cumsum([0] + [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)])
    for g in groups:
        first = int(firsts[g])
        if not read:
            n = metadata.row_group(g).num_rows
            for s in range(0, n, READ_BATCH_ROWS):
                yield first + s, min(READ_BATCH_ROWS, n - s), [None] * len(wanted)
            continue
        for batch in pf.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=[g], columns=read):
            yield first, batch.num_rows, [None if c is None else batch.column(c) for c in found]
            first += batch.num_rows


def _row_groups(metadata: Any, start: int, length: int | None) -> list[int]:
    """The row groups of a file piece ``[start, start + length)``: those whose
    midpoint lies in it, as parquet-mr assigns them to Spark's splits; all
    for a whole file."""
    if length is None:
        return list(range(metadata.num_row_groups))
    out = []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        first = group.column(0)
        offset = first.data_page_offset
        if first.has_dictionary_page and 0 < first.dictionary_page_offset < offset:
            offset = first.dictionary_page_offset
        size = sum(group.column(c).total_compressed_size for c in range(group.num_columns))
        if start <= offset + size // 2 < start + length:
            out.append(g)
    return out


__all__ = [
    "SOURCE_NAME",
    "DeltaArrowSource",
    "arrow_read",
    "arrow_read_parquet",
    "plan_splits",
    "read_entries",
    "worker_root",
]
