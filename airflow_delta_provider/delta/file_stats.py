"""Per-file Delta statistics, read from a written file's parquet footer.

Delta's ``add.stats`` holds ``numRecords`` and, for the first
``delta.dataSkippingNumIndexedCols`` (32) non-partition leaf columns,
``minValues``/``maxValues``/``nullCount`` nested like the schema
(PROTOCOL.md "Per-file Statistics"). delta-spark computes them with an extra
aggregation while writing; the footer already holds the same numbers per row
group, so combining them costs one small read per file and no pass over the
data.

Rules followed (delta-spark ``StatisticsCollection``):

- min/max only for integral, decimal, date, timestamp and string columns;
  other types (boolean, binary, complex) get no bounds, and neither do
  floats, whose footer bounds ignore NaN;
- strings keep 32 characters; a cut max gets a tie-break character so that it
  still bounds every value (``\\x7f`` when the next character allows it,
  U+10FFFF otherwise);
- timestamps (``timestamp`` with a ``Z``, ``timestamp_ntz`` without) are
  written with millisecond precision, floored (readers add one millisecond to
  a max); bounds outside years 1 to 9999 are left out;
- a bound is omitted when any row group with values lacks it, and a null
  count when any row group lacks one. Omitting is always legal; a wrong bound
  would make readers skip live rows.

Arrays and maps count towards the 32 columns like in delta-spark, but get no
stats: their footer null counts are per element, not per row. So do
``variant`` columns: the footer knows only their ``value`` and ``metadata``
parts, and readers never use a variant's stats.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow.parquet as pq

from airflow_delta_provider.delta.schema.types import VARIANT

STRING_PREFIX_LENGTH = 32
_ASCII_MAX = "\x7f"
_UTF8_MAX = "\U0010ffff"
_EPOCH = _dt.datetime(1970, 1, 1)

_INTEGRAL = {"byte", "short", "integer", "long"}
_FRACTIONAL = {"float", "double"}
# Floats get no bounds: footers leave NaN out of min/max, but Spark sorts NaN
# above every number, so a footer max could wrongly skip a NaN row.
_BOUNDED = _INTEGRAL | {"date", "timestamp", "timestamp_ntz", "string"}


# --- Which columns ----------------------------------------------------------


# --- From the footer ------------------------------------------------------------


def stats_from_footer(
    metadata: pq.FileMetaData,
    leaves: Sequence[tuple[tuple[str, ...], Any]],
) -> dict[str, Any]:
    """Delta stats (as a dict) from a parquet file's metadata."""
    columns = _column_index(metadata)
    stats: dict[str, Any] = {"numRecords": metadata.num_rows}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path, dtype in leaves:
        if not isinstance(dtype, str) or dtype == VARIANT:
            continue  # array/map/variant: counted among the leaves, no stats
        index = columns.get(path) or columns.get(tuple(p.lower() for p in path))
        if index is None:
            # A column the file does not have reads as null in every row.
            _put(nulls, path, metadata.num_rows)
            continue
        null_count, lo, hi = _combine(metadata, index, dtype)
        if null_count is not None:
            _put(nulls, path, null_count)
        if lo is not None and hi is not None:
            _put(mins, path, lo)
            _put(maxs, path, hi)
    if mins:
        stats["minValues"] = mins
    if maxs:
        stats["maxValues"] = maxs
    if nulls:
        stats["nullCount"] = nulls
    return stats


def file_stats(path: str, leaves: Sequence[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """Delta stats of the parquet file at ``path`` (reads the footer only)."""
    return stats_from_footer(pq.ParquetFile(path).metadata, leaves)


def _column_index(metadata: pq.FileMetaData) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    schema = metadata.schema
    for i in range(len(schema)):
        path = tuple(schema.column(i).path.split("."))
        out.setdefault(path, i)
        out.setdefault(tuple(p.lower() for p in path), i)
    return out


def _combine(metadata: pq.FileMetaData, index: int, dtype: str) -> tuple[int | None, Any, Any]:
    """Null count, min and max of one column over all row groups."""
    null_count: int | None = 0
    lo = hi = None
    bounded = dtype in _BOUNDED or dtype.startswith("decimal")
    bounds_ok = bounded
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        chunk = group.column(index)
        st = chunk.statistics
        if st is None or not st.has_null_count:
            null_count = None
        elif null_count is not None:
            null_count += st.null_count
        if not bounds_ok:
            continue
        all_null = st is not None and st.has_null_count and st.null_count == group.num_rows
        if all_null:
            continue
        if st is None or not st.has_min_max:
            bounds_ok = False
            continue
        g_lo, g_hi = _value(st, dtype, lower=True), _value(st, dtype, lower=False)
        if g_lo is None or g_hi is None:
            bounds_ok = False
            continue
        lo = g_lo if lo is None or g_lo < lo else lo
        hi = g_hi if hi is None or g_hi > hi else hi
    if not bounds_ok or lo is None:
        return null_count, None, None
    return null_count, _render(lo, dtype, is_max=False), _render(hi, dtype, is_max=True)


def _value(st: Any, dtype: str, *, lower: bool) -> Any:
    """A comparable Python value of one footer bound (the min, or with
    ``lower`` False the max), or None if unusable."""
    if dtype in ("timestamp", "timestamp_ntz"):
        # The raw INT64: a datetime cannot hold every value Spark can write.
        return _timestamp_micros(st.logical_type, st.min_raw if lower else st.max_raw)
    value = st.min if lower else st.max
    if dtype.startswith("decimal"):
        if isinstance(value, decimal.Decimal):
            return value
        if isinstance(value, int):  # INT32/INT64 without the logical type applied
            scale = int(dtype[dtype.index(",") + 1 : -1])
            return decimal.Decimal(value).scaleb(-scale)
        return None
    if dtype in _FRACTIONAL:
        return float(value) if value is not None and math.isfinite(value) else None
    if dtype in _INTEGRAL:
        return int(value) if isinstance(value, int) else None
    if dtype == "date":
        return value if isinstance(value, _dt.date) else None
    if dtype == "string":
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return value if isinstance(value, str) else None
    return None


def _timestamp_micros(logical_type: Any, raw: Any) -> int | None:
    """Microseconds since the epoch from an INT64 timestamp bound (INT96 has none)."""
    if not isinstance(raw, int) or logical_type is None:
        return None
    text = str(logical_type)
    if not text.startswith("Timestamp"):
        return None
    if "milliseconds" in text:
        return raw * 1000
    if "nanoseconds" in text:
        return raw // 1000
    return raw


def _render(value: Any, dtype: str, *, is_max: bool) -> Any:
    """A bound in its stats JSON form."""
    if dtype in ("timestamp", "timestamp_ntz"):
        return _timestamp_text(value, "Z" if dtype == "timestamp" else "")
    if dtype == "date":
        return value.isoformat()
    if dtype == "string":
        return truncate_max_string(value) if is_max else truncate_min_string(value)
    return value


def _timestamp_text(micros: int, suffix: str) -> str | None:
    """``yyyy-MM-ddTHH:mm:ss.SSS`` + ``suffix`` of a bound in microseconds,
    floored to milliseconds (readers widen a max by 1 ms); None outside
    years 1 to 9999, which the text cannot hold (the bound is then left out)."""
    try:
        moment = _EPOCH + _dt.timedelta(milliseconds=micros // 1000)
    except OverflowError:
        return None
    return moment.isoformat(timespec="milliseconds") + suffix


def truncate_min_string(value: str, prefix: int = STRING_PREFIX_LENGTH) -> str:
    """A lower bound of ``value`` at most ``prefix`` characters long."""
    return value[:prefix]


def truncate_max_string(value: str, prefix: int = STRING_PREFIX_LENGTH) -> str | None:
    """An upper bound of ``value`` about ``prefix`` characters long (delta-spark's rule).

    A prefix alone sorts below the value, so a tie-break character that sorts
    above the first dropped character (in UTF-8 byte order) is appended. None
    when no such bound fits in twice the prefix length.
    """
    if len(value) <= prefix:
        return value
    current = prefix
    while current <= 2 * prefix:
        if current >= len(value):
            return value
        ch = value[current]
        if ch == _UTF8_MAX:
            current += 1
        elif ch < _ASCII_MAX:
            return value[:current] + _ASCII_MAX
        else:
            return value[:current] + _UTF8_MAX
    return None


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    if value is None:
        return
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


# --- JSON ----------------------------------------------------------------------


def stats_json(stats: Mapping[str, Any]) -> str:
    """Compact JSON of a stats dict; decimals are written as exact JSON numbers."""
    return _dump(stats)


def _dump(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


__all__ = [
    "file_stats",
    "stats_from_footer",
    "stats_json",
    "truncate_max_string",
    "truncate_min_string",
]
