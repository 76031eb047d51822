"""Fixtures shared by the core's interop, conformance, concurrency and crash tests.

The tests compare the core against independent readers (``deltalake`` and
DuckDB's ``delta`` extension), so they need two small engines of their own:

* a pure-pyarrow *reader* that turns a :class:`Snapshot` into rows (each live
  file read with ``pyarrow.parquet``, partition columns added from the log's
  typed partition values), and
* a pure-pyarrow *writer* of data files that returns the ``add`` action for
  each file, with delta-spark style stats, Hive directories and URI-encoded
  paths.

Both are handed out as fixtures (test folders are not packages), and a
canonical row form makes row sets comparable across engines.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import AddFile

# --- Canonical rows ------------------------------------------------------------


def canonical_value(v: Any) -> Any:
    """A JSON-able form of one value that two engines agree on.

    Naive timestamps are taken as UTC (INT96 and ``TIMESTAMP_MILLIS`` files come
    back naive); decimals are normalized (``1.00`` == ``1``); maps come back as
    sorted key/value pairs whatever container pyarrow chose.
    """
    if v is None:
        return None
    if isinstance(v, dict):
        return {k: canonical_value(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        # A map: pyarrow gives a list of (key, value) tuples.
        return sorted(([canonical_value(k), canonical_value(x)] for k, x in v), key=json.dumps)
    if isinstance(v, (list, tuple)):
        return [canonical_value(x) for x in v]
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc).isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return format(v.normalize(), "f") if v == v else "NaN"
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else repr(float(v))
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    return v if isinstance(v, str) else str(v)


def canonical_rows(table: pa.Table, columns: Iterable[str] | None = None) -> Counter[str]:
    """The multiset of rows of ``table`` (order-independent), as JSON strings."""
    names = list(columns) if columns is not None else table.column_names
    lowered = {n.lower(): n for n in table.column_names}
    picked = table.select([lowered[n.lower()] for n in names])
    rows = Counter()
    for row in picked.to_pylist():
        rows[json.dumps([canonical_value(row[c]) for c in picked.column_names], sort_keys=True)] += 1
    return rows


def _sorted_equal(got: pa.Table, expected: pa.Table) -> bool:
    """Arrow-native check for big flat tables: cast, sort by every column, compare."""
    if not all(
        pa.types.is_primitive(f.type) or pa.types.is_decimal(f.type) or pa.types.is_string(f.type)
        for f in expected.schema
    ):
        return False
    try:
        got = got.cast(expected.schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError):
        return False
    keys = [(name, "ascending") for name in expected.column_names]
    return got.sort_by(keys).equals(expected.sort_by(keys))


def same_rows(got: pa.Table, expected: pa.Table) -> bool:
    """Whether ``got`` holds the rows of ``expected`` (any order, columns
    matched by name, case-insensitively)."""
    if got.num_rows != expected.num_rows:
        return False
    lowered = {n.lower(): n for n in got.column_names}
    if any(n.lower() not in lowered for n in expected.column_names):
        return False
    got = got.select([lowered[n.lower()] for n in expected.column_names])
    got = got.rename_columns(expected.column_names)
    if _sorted_equal(got, expected):
        return True
    return canonical_rows(got) == canonical_rows(expected)


@pytest.fixture(scope="session")
def rows_of() -> Callable[..., Counter[str]]:
    """``rows_of(pa_table, columns=None)``: a comparable multiset of rows."""
    return canonical_rows


@pytest.fixture(scope="session")
def rows_match() -> Callable[[pa.Table, pa.Table], bool]:
    """``rows_match(got, expected)``: same rows in any order (fast for big tables)."""
    return same_rows


# --- Reading a snapshot with pyarrow ------------------------------------------


def _cast_column(arr: pa.ChunkedArray | pa.Array, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if arr.type == target:
        return arr
    try:
        return arr.cast(target, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return arr


def _drop_deleted_rows(snapshot: Any, add: AddFile, data: pa.Table) -> pa.Table:
    """``data`` (one file's rows) without the rows its deletion vector hides."""
    deleted = snapshot.deleted_rows(add)
    if deleted is None:
        return data
    from airflow_delta_provider.delta.actions.deletion_vectors import row_indexes

    assert not deleted or deleted.max() < data.num_rows, f"{add.path}: DV row index past the file's end"
    positions = pa.array(range(data.num_rows), pa.uint64())
    return data.filter(pc.invert(pc.is_in(positions, value_set=row_indexes(deleted))))


def read_snapshot(snapshot: Any) -> pa.Table:
    """Every row of a snapshot: live files read with pyarrow, the rows their
    deletion vectors hide left out, partition columns filled from the log's
    typed partition values, missing columns null. Under column mapping,
    columns are found by physical name and relabelled with logical names.

    Columns come out in the table schema's order, typed as
    :func:`schema.to_arrow_schema` maps them.
    """
    from airflow_delta_provider.delta.partitions import file_storage, parse_partition_values
    from airflow_delta_provider.delta.schema.arrow import to_arrow_schema

    schema = snapshot.schema
    mapping = snapshot.column_mapping
    part_cols = list(snapshot.partition_columns)
    part_lower = {c.lower() for c in part_cols}
    arrow_schema = to_arrow_schema(schema, metadata=False)
    physical_schema = to_arrow_schema(mapping.physical_schema(), metadata=False)
    pieces = []
    storage = snapshot.log_store.storage
    for add in snapshot.files:
        holder, rel = file_storage(storage, add.path)
        with holder.open_input_file(rel) as f:
            data = _drop_deleted_rows(snapshot, add, pq.read_table(f))
        in_file = {n.lower(): n for n in data.column_names}
        values = mapping.logical_partition_values(add.partition_values, part_cols)
        typed = parse_partition_values(values, schema, part_cols) if part_cols else {}
        typed_lower = {k.lower(): v for k, v in typed.items()}
        columns = []
        for f, physical in zip(arrow_schema, physical_schema):
            key = f.name.lower()
            if key in part_lower:
                columns.append(pa.array([typed_lower.get(key)] * data.num_rows, type=f.type))
            elif physical.name.lower() in in_file:
                column = _cast_column(data.column(in_file[physical.name.lower()]), physical.type)
                if physical.type != f.type and column.type == physical.type:  # nested physical names
                    column = pa.chunked_array([c.view(f.type) for c in column.chunks], type=f.type)
                columns.append(_cast_column(column, f.type))
            else:
                columns.append(pa.nulls(data.num_rows, f.type))
        pieces.append(pa.table(columns, names=[f.name for f in arrow_schema]))
    if not pieces:
        return arrow_schema.empty_table()
    return pa.concat_tables(pieces, promote_options="permissive")


@pytest.fixture(scope="session")
def snapshot_rows() -> Callable[[Any], pa.Table]:
    """``snapshot_rows(snapshot) -> pa.Table``: the rows of a snapshot, by pyarrow."""
    return read_snapshot


# --- Writing data files with pyarrow ------------------------------------------

_STATS_TYPES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_date,
    pa.types.is_timestamp,
    pa.types.is_decimal,
)


def _stat_value(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    return v


def file_stats(table: pa.Table) -> str:
    """delta-spark style ``stats`` JSON: numRecords, min/max of orderable
    columns, nullCount of every top-level column."""
    mins, maxs, nulls = {}, {}, {}
    for name in table.column_names:
        col = table.column(name)
        nulls[name] = col.null_count
        if any(check(col.type) for check in _STATS_TYPES) and col.null_count < len(col):
            mm = pc.min_max(col).as_py()
            if mm["min"] is not None and not (isinstance(mm["min"], float) and math.isnan(mm["min"])):
                mins[name], maxs[name] = _stat_value(mm["min"]), _stat_value(mm["max"])
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls})


def write_data_file(
    table_root: str | os.PathLike[str],
    data: pa.Table,
    partition_values: Mapping[str, Any] | None = None,
    partition_schema: Mapping[str, str] | None = None,
) -> AddFile:
    """Write ``data`` (without partition columns) under its Hive directory and
    return the ``add`` action for it (relative, URI-encoded path; stats)."""
    from airflow_delta_provider.delta.partitions import encode_path, partition_dir, serialize_partition_value

    partition_values = dict(partition_values or {})
    partition_schema = dict(partition_schema or {})
    serialized = {
        col: serialize_partition_value(value, partition_schema.get(col, "string"))
        for col, value in partition_values.items()
    }
    directory = partition_dir(list(serialized), serialized) if serialized else ""
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    relative = f"{directory}/{name}" if directory else name
    if "://" in str(table_root):  # an object store, through the core's storage (credentials from env)
        from airflow_delta_provider.delta.storage import open_storage

        storage = open_storage(str(table_root))
        buf = pa.BufferOutputStream()
        pq.write_table(data, buf, compression="snappy")
        storage.put(relative, buf.getvalue().to_pybytes())
        meta = storage.head(relative)
        size, mtime = meta.size, meta.mtime_ms
    else:
        full = Path(table_root) / relative
        full.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, full, compression="snappy")
        st = full.stat()
        size, mtime = st.st_size, st.st_mtime_ns // 1_000_000
    return AddFile(
        path=encode_path(relative),
        partition_values=serialized,
        size=size,
        modification_time=mtime,
        data_change=True,
        stats=file_stats(data),
    )


@pytest.fixture(scope="session")
def data_file() -> Callable[..., AddFile]:
    """``data_file(root, pa_table, partition_values=None, partition_schema=None) -> AddFile``."""
    return write_data_file


def now_ms() -> int:
    return int(time.time() * 1000)


# --- Making tables with the core ------------------------------------------------


def create_table(
    uri: str | os.PathLike[str],
    schema: pa.Schema,
    partition_columns: Iterable[str] = (),
    configuration: Mapping[str, str] | None = None,
    adds: Iterable[AddFile] = (),
) -> Any:
    """Create a table at version 0 through the core; return the commit result."""
    from airflow_delta_provider.delta.actions.model import Metadata
    from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
    from airflow_delta_provider.delta.schema.types import schema_string
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(str(uri))
    txn = table.transaction(
        "CREATE TABLE",
        parameters={"partitionBy": json.dumps(list(partition_columns))},
        snapshot=None,
    )
    txn.update_metadata(
        Metadata.new(
            schema_string(from_arrow_schema(schema, metadata=False)),
            partition_columns,
            configuration or {},
            created_time=now_ms(),
        )
    )
    txn.add_all(list(adds))
    return txn.commit(metrics=None, token=None)


@pytest.fixture(scope="session")
def new_table() -> Callable[..., Any]:
    """``new_table(uri, arrow_schema, partition_columns=(), configuration=None, adds=())``."""
    return create_table


@pytest.fixture(scope="session")
def deltalake_rows() -> Callable[..., pa.Table]:
    """``deltalake_rows(path, version=None) -> pa.Table``: delta-rs's answer."""

    def read(
        path: str | os.PathLike[str], version: int | None = None, storage_options: Mapping[str, str] | None = None
    ) -> pa.Table:
        from deltalake import DeltaTable as RsTable

        t = RsTable(str(path), version=version, storage_options=dict(storage_options or {}) or None)
        return t.to_pyarrow_table()

    return read
