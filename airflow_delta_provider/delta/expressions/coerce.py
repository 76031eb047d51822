"""Spark's coercion of literals to column types.

A comparison of a column with a literal is judged on the column's type, the
way Spark would compare them. Only the coercions whose result is certain are
made; anything else gives :data:`NO_VALUE`, and the comparison stays unknown
(a file is then kept, never pruned wrongly):

- integral columns take integer and decimal literals, and doubles below
  2**53 (Spark compares those in double, exactly only there);
- ``float`` and ``double`` columns take numbers (an integer above 2**53 is
  not exact in a double; a ``float`` column rounds to single precision);
- ``decimal(p,s)`` columns take integers and decimals, compared exactly;
- ``date`` columns take dates and strings (Spark's cast keeps the date part
  of ``yyyy-MM-dd hh:mm:ss``);
- ``timestamp`` columns take timestamps, strings and dates; text without an
  offset is read in the session time zone;
- ``timestamp_ntz`` columns take text without an offset, and dates.

A string literal is never coerced to a number (``id = '100'``), nor a number
to a string: Spark's rules there depend on its version and ANSI mode.
"""

from __future__ import annotations

import datetime as dt
import math
import zoneinfo
from decimal import Decimal, InvalidOperation
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.tree import Literal
from airflow_delta_provider.delta.partitions import decimal_scale, to_float32

#: The integral Delta types.
INTEGRAL = ("byte", "short", "integer", "long")
#: What :func:`coerce_literal` gives when Spark's coercion is not certain to match.
NO_VALUE: Any = object()


def time_zone(name: str) -> dt.tzinfo:
    """The session time zone ``name`` (an IANA name such as ``UTC`` or ``Asia/Tokyo``)."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidInputError(f"unknown time zone {name!r}") from e


def parse_date(text: str) -> dt.date:
    """A date as Spark casts text to a date: a timestamp keeps its date part."""
    text = text.strip()
    if len(text) > 10 and text[10] in " T":
        text = text[:10]
    return dt.date.fromisoformat(text)


def parse_timestamp(text: str, tz: dt.tzinfo) -> dt.datetime:
    """An aware timestamp; text without an offset is read in ``tz``."""
    ts = dt.datetime.fromisoformat(text.strip())
    return ts.replace(tzinfo=tz) if ts.tzinfo is None else ts


def number(text: str) -> Literal:
    """A numeric literal as Spark types it: ``1`` int, ``1.5`` decimal, ``1e0`` double."""
    if any(c in text for c in "eE"):
        return Literal("double", float(text))
    if "." in text:
        return Literal("decimal", Decimal(text))
    return Literal("int", int(text))


def cast_literal(lit: Literal, kind: str) -> Literal | None:
    """``CAST(lit AS <kind>)``: only the conversions whose result is certain; None otherwise.

    ``kind`` is a literal kind (``int``, ``date``, ...). Raises ValueError,
    InvalidOperation or OverflowError on text that is not a number.
    """
    if kind in ("date", "timestamp", "timestamp_ntz"):
        return Literal(kind, lit.value) if lit.kind == "string" else None
    if kind == "string":
        return lit if lit.kind == "string" else None
    if kind == "bool":
        return lit if lit.kind == "bool" else None
    if lit.kind not in ("int", "decimal", "string"):
        return lit if lit.kind == kind else None
    text = str(lit.value).strip()
    if kind == "int":
        return Literal("int", int(text))
    if kind == "decimal":
        return Literal("decimal", Decimal(text))
    if kind == "double":
        return Literal("double", float(Decimal(text)))
    return Literal("float", to_float32(float(Decimal(text))))


def coerce_literal(lit: Literal, column_type: str, tz: dt.tzinfo) -> Any:
    """``lit`` as a value comparable with a column of Delta type ``column_type``
    (lower case), the way Spark compares them; :data:`NO_VALUE` where Spark's
    coercion is not certain to match. ``tz`` is the session time zone."""
    k, v = lit.kind, lit.value
    try:
        if column_type in INTEGRAL:
            if k in ("int", "decimal"):
                return v
            # Spark compares in double: exact only below 2**53.
            if k == "double" and math.isfinite(v) and abs(v) < 2**53:
                return v
        elif column_type in ("float", "double"):
            if k == "int":
                if column_type == "float":
                    return to_float32(float(v))
                return float(v) if abs(v) <= 2**53 else NO_VALUE
            if k == "decimal":
                return float(v)
            if k in ("double", "float"):
                return v
        elif decimal_scale(column_type) is not None:
            if k in ("int", "decimal"):
                return Decimal(v)
        elif column_type == "string":
            if k == "string":
                return v
        elif column_type == "boolean":
            if k == "bool":
                return v
        elif column_type == "date":
            if k in ("date", "string"):
                return parse_date(v)
        elif column_type == "timestamp":
            if k in ("timestamp", "string"):
                return parse_timestamp(v, tz)
            if k == "date":
                return dt.datetime.combine(parse_date(v), dt.time(), tz)
        elif column_type == "timestamp_ntz":
            if k in ("timestamp_ntz", "string"):
                ts = dt.datetime.fromisoformat(v.strip())
                return ts if ts.tzinfo is None else NO_VALUE
            if k == "date":
                return dt.datetime.combine(parse_date(v), dt.time())
    except (ValueError, TypeError, InvalidOperation, OverflowError):
        return NO_VALUE
    return NO_VALUE


__all__ = [
    "INTEGRAL",
    "NO_VALUE",
    "cast_literal",
    "coerce_literal",
    "number",
    "parse_date",
    "parse_timestamp",
    "time_zone",
]
