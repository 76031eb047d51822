"""The typed columns a checkpoint may hold beside ``add.stats``.

With ``delta.checkpoint.writeStatsAsStruct=true`` a checkpoint's ``add`` struct
also holds ``partitionValues_parsed`` (each partition column, by physical name,
in its own type) and ``stats_parsed`` (``numRecords``, ``minValues``,
``maxValues``, ``nullCount`` and, on a table with deletion vectors,
``tightBounds``, typed), as PROTOCOL.md "Checkpoint Schema" describes and
delta-spark's ``Checkpoints.buildCheckpoint`` writes them: the stats schema is
delta-spark's ``StatisticsCollection.statsSchema`` (the stats columns the table
properties pick; min and max only for numbers, dates, timestamps and strings;
a null count for every leaf), and each file's JSON stats are parsed into it
leniently (a value that does not fit is null, as ``from_json`` makes it).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.partitions import parse_partition_value
from airflow_delta_provider.delta.schema.arrow import to_arrow_type
from airflow_delta_provider.delta.schema.fields import stats_leaves
from airflow_delta_provider.delta.schema.types import canonical_primitive, is_decimal, is_primitive
from airflow_delta_provider.delta.table_features.features import DELETION_VECTORS, listed_features

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

#: Types that get min and max values (delta-spark's ``SkippingEligibleDataType``).
_MIN_MAX_TYPES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}
)

Path = tuple[str, ...]


def _min_max_eligible(delta_type: Any) -> bool:
    if not is_primitive(delta_type):
        return False
    name = canonical_primitive(delta_type)
    return name in _MIN_MAX_TYPES or is_decimal(name)


def _nested(leaves: Sequence[tuple[Path, pa.DataType]]) -> pa.StructType | None:
    """A struct type holding each (path, type) leaf, nested by path; None when empty."""
    tree: dict[str, Any] = {}
    for path, arrow_type in leaves:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node.setdefault(path[-1], arrow_type)

    def build(node: dict[str, Any]) -> pa.StructType:
        return pa.struct([(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree) if tree else None


def _stats_columns(snapshot: Snapshot) -> list[tuple[Path, Any]]:
    """The (physical path, Delta type) of each stats column."""
    mapping = snapshot.column_mapping
    leaves = stats_leaves(snapshot.schema, snapshot.partition_columns, snapshot.configuration)
    return [(mapping.physical_path(path), delta_type) for path, delta_type in leaves]


def stats_struct_type(snapshot: Snapshot) -> pa.StructType:
    """The type of ``add.stats_parsed`` for ``snapshot``."""
    columns = _stats_columns(snapshot)
    min_max = _nested([(p, to_arrow_type(t)) for p, t in columns if _min_max_eligible(t)])
    null_count = _nested([(p, pa.int64()) for p, _t in columns])
    fields: list[tuple[str, pa.DataType]] = [("numRecords", pa.int64())]
    if min_max is not None:
        fields += [("minValues", min_max), ("maxValues", min_max)]
    if null_count is not None:
        fields.append(("nullCount", null_count))
    if DELETION_VECTORS in listed_features(snapshot.protocol)[0]:
        fields.append(("tightBounds", pa.bool_()))
    return pa.struct(fields)


def partition_values_struct_type(snapshot: Snapshot) -> pa.StructType | None:
    """The type of ``add.partitionValues_parsed``; None for an unpartitioned table."""
    if not snapshot.partition_columns:
        return None
    mapping = snapshot.column_mapping
    by_name = {f["name"].lower(): f for f in snapshot.schema.get("fields", ())}
    return pa.struct(
        [(mapping.physical_column(c), to_arrow_type(by_name[c.lower()]["type"])) for c in snapshot.partition_columns]
    )


def _fit(value: Any, arrow_type: pa.DataType) -> Any:
    """``value`` (from JSON stats) as a Python value of ``arrow_type``; None when it does not fit."""
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        if not isinstance(value, dict):
            return None
        return {f.name: _fit(value.get(f.name), f.type) for f in arrow_type}
    try:
        if pa.types.is_timestamp(arrow_type):
            ts = (
                value
                if isinstance(value, dt.datetime)
                else dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            )
            if arrow_type.tz is not None and ts.tzinfo is None:
                ts = ts.replace(tzinfo=dt.timezone.utc)
            if arrow_type.tz is None and ts.tzinfo is not None:
                ts = ts.replace(tzinfo=None)
            return ts
        if pa.types.is_date(arrow_type):
            return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])
        if pa.types.is_decimal(arrow_type):
            return decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-arrow_type.scale))
        if pa.types.is_string(arrow_type):
            return value if isinstance(value, str) else None
        if pa.types.is_floating(arrow_type):
            return (
                float(value)
                if not isinstance(value, (bool, str)) or value in ("NaN", "Infinity", "-Infinity")
                else None
            )
        if pa.types.is_integer(arrow_type):
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
        if pa.types.is_boolean(arrow_type):
            return value if isinstance(value, bool) else None
    except (ValueError, TypeError, ArithmeticError):
        return None
    return None


def _checked(value: Any, arrow_type: pa.DataType) -> Any:
    """``value`` when arrow takes it as ``arrow_type`` (an integer out of range, a decimal too wide: null)."""
    try:
        pa.array([value], arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
        return None
    return value


def stats_parsed_array(files: Sequence[AddFile], struct_type: pa.StructType) -> pa.Array:
    """``add.stats_parsed`` of each file: its stats in ``struct_type``; null for a file without stats."""
    rows: list[dict[str, Any] | None] = []
    for f in files:
        stats = f.parsed_stats()
        if not stats:
            rows.append(None)
            continue
        row = _fit(stats, struct_type)
        rows.append({field.name: _checked(row[field.name], field.type) for field in struct_type})
    return pa.array(rows, struct_type)


def partition_values_parsed_array(files: Sequence[AddFile], snapshot: Snapshot, struct_type: pa.StructType) -> pa.Array:
    """``add.partitionValues_parsed`` of each file: its partition values, typed."""
    mapping = snapshot.column_mapping
    by_name = {f["name"].lower(): f for f in snapshot.schema.get("fields", ())}
    keys = [(mapping.physical_column(c), by_name[c.lower()]["type"]) for c in snapshot.partition_columns]
    rows = []
    for f in files:
        values = f.partition_values or {}
        row = {}
        for key, delta_type in keys:
            try:
                row[key] = parse_partition_value(values.get(key), delta_type)
            except Exception:
                row[key] = None
        rows.append(row)
    return pa.array(rows, struct_type)


__all__ = ["partition_values_parsed_array", "partition_values_struct_type", "stats_parsed_array", "stats_struct_type"]
