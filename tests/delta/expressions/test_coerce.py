"""Tests for delta/expressions/coerce.py: Spark's coercion of literals to column types."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.coerce import (
    NO_VALUE,
    cast_literal,
    coerce_literal,
    number,
    parse_date,
    parse_timestamp,
    time_zone,
)
from airflow_delta_provider.delta.expressions.tree import Literal

UTC = dt.timezone.utc
TOKYO = time_zone("Asia/Tokyo")


def coerce(kind: str, value, column_type: str, tz: dt.tzinfo = UTC):
    return coerce_literal(Literal(kind, value), column_type, tz)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", Literal("int", 1)),
        ("1.50", Literal("decimal", Decimal("1.50"))),
        ("1e2", Literal("double", 100.0)),
        ("2E-1", Literal("double", 0.2)),
    ],
)
def test_numbers_are_typed_as_spark_types_them(text, expected):
    assert number(text) == expected
    assert type(number(text).value) is type(expected.value)


@pytest.mark.parametrize("column_type", ["byte", "short", "integer", "long"])
def test_integral_columns(column_type):
    assert coerce("int", 7, column_type) == 7
    assert coerce("decimal", Decimal("7.5"), column_type) == Decimal("7.5")  # compared exactly, not truncated
    assert coerce("double", 7.5, column_type) == 7.5
    assert coerce("double", float(2**53 - 1), column_type) == 2**53 - 1
    # Spark compares in double, exact only below 2**53
    assert coerce("double", float(2**53), column_type) is NO_VALUE
    assert coerce("double", float("inf"), column_type) is NO_VALUE
    assert coerce("double", float("nan"), column_type) is NO_VALUE
    assert coerce("string", "7", column_type) is NO_VALUE  # string vs number: not guessed
    assert coerce("bool", True, column_type) is NO_VALUE


def test_fractional_columns():
    assert coerce("int", 3, "double") == 3.0
    assert coerce("int", 2**53, "double") == float(2**53)
    assert coerce("int", 2**53 + 1, "double") is NO_VALUE  # not exact in a double
    assert coerce("int", 2**24 + 1, "float") == float(2**24)  # rounded to single precision
    assert coerce("decimal", Decimal("0.5"), "double") == 0.5
    assert coerce("double", 0.1, "float") == 0.1
    assert coerce("float", 0.5, "double") == 0.5
    assert coerce("string", "1", "double") is NO_VALUE


def test_decimal_columns_compare_exactly():
    got = coerce("decimal", Decimal("0.10"), "decimal(10,2)")
    assert got == Decimal("0.1") and isinstance(got, Decimal)
    assert coerce("int", 5, "decimal(38,0)") == Decimal(5)
    assert coerce("double", 0.1, "decimal(10,2)") is NO_VALUE  # a double literal: not compared
    assert coerce("string", "1", "decimal(10,2)") is NO_VALUE


def test_strings_and_booleans_take_only_their_own_kind():
    assert coerce("string", "a", "string") == "a"
    assert coerce("int", 1, "string") is NO_VALUE
    assert coerce("bool", False, "boolean") is False
    assert coerce("int", 0, "boolean") is NO_VALUE
    assert coerce("string", "x", "binary") is NO_VALUE
    assert coerce("string", "x", "") is NO_VALUE  # a nested column


def test_dates():
    assert coerce("date", "2020-01-02", "date") == dt.date(2020, 1, 2)
    assert coerce("string", " 2020-01-02 23:59:59", "date") == dt.date(2020, 1, 2)  # the date part
    assert coerce("string", "2020-01-02T23:59:59", "date") == dt.date(2020, 1, 2)
    assert coerce("string", "not a date", "date") is NO_VALUE
    assert coerce("timestamp", "2020-01-02 10:00:00", "date") is NO_VALUE
    assert coerce("int", 1, "date") is NO_VALUE


def test_timestamps_are_read_in_the_session_time_zone():
    assert coerce("timestamp", "2021-01-01 09:00:00", "timestamp", TOKYO) == dt.datetime(2021, 1, 1, 0, 0, tzinfo=UTC)
    assert coerce("string", "2021-01-01 09:00:00", "timestamp", UTC) == dt.datetime(2021, 1, 1, 9, 0, tzinfo=UTC)
    # an explicit offset wins over the session's
    assert coerce("timestamp", "2021-01-01 00:00:00-09:00", "timestamp", TOKYO) == dt.datetime(
        2021, 1, 1, 9, tzinfo=UTC
    )
    # a date is midnight in the session time zone
    assert coerce("date", "2021-01-01", "timestamp", TOKYO) == dt.datetime(2020, 12, 31, 15, tzinfo=UTC)
    assert coerce("string", "yesterday", "timestamp") is NO_VALUE
    assert coerce("int", 0, "timestamp") is NO_VALUE


def test_timestamps_without_a_zone():
    assert coerce("timestamp_ntz", "2021-01-01 09:00:00.5", "timestamp_ntz", TOKYO) == dt.datetime(
        2021, 1, 1, 9, 0, 0, 500000
    )
    assert coerce("string", "2021-01-01 09:00:00+01:00", "timestamp_ntz") is NO_VALUE  # names an instant
    assert coerce("date", "2021-01-01", "timestamp_ntz", TOKYO) == dt.datetime(2021, 1, 1)
    assert coerce("timestamp", "2021-01-01 09:00:00", "timestamp_ntz") is NO_VALUE


def test_parse_helpers():
    assert parse_date("2020-02-29 10:00") == dt.date(2020, 2, 29)
    with pytest.raises(ValueError):
        parse_date("2021-02-29")
    assert parse_timestamp("2020-01-01T00:00:00", TOKYO).utcoffset() == dt.timedelta(hours=9)


def test_unknown_time_zones_are_refused():
    assert time_zone("UTC").utcoffset(None) == dt.timedelta(0)
    for name in ("Nowhere/Else", "", "../etc/passwd"):
        with pytest.raises(InvalidInputError, match="time zone"):
            time_zone(name)


@pytest.mark.parametrize(
    "lit, kind, expected",
    [
        (Literal("string", "2020-01-01"), "date", Literal("date", "2020-01-01")),
        (Literal("int", 1), "date", None),
        (Literal("string", " 12 "), "int", Literal("int", 12)),
        (Literal("decimal", Decimal(3)), "int", Literal("int", 3)),
        (Literal("int", 3), "decimal", Literal("decimal", Decimal(3))),
        (Literal("string", "0.5"), "double", Literal("double", 0.5)),
        (Literal("int", 16777217), "float", Literal("float", 16777216.0)),
        (Literal("double", 1.5), "double", Literal("double", 1.5)),
        (Literal("double", 1.5), "int", None),  # Spark truncates toward zero: not guessed
        (Literal("string", "a"), "string", Literal("string", "a")),
        (Literal("int", 1), "string", None),
        (Literal("bool", True), "bool", Literal("bool", True)),
        (Literal("string", "true"), "bool", None),
    ],
)
def test_cast_literal(lit, kind, expected):
    assert cast_literal(lit, kind) == expected


def test_cast_literal_of_text_that_is_no_number_raises():
    with pytest.raises((ValueError, InvalidOperation)):
        cast_literal(Literal("string", "x"), "int")
    with pytest.raises((ValueError, InvalidOperation)):
        cast_literal(Literal("string", "x"), "decimal")
