"""conform_array(): file arrays made exactly the Arrow type Spark expects (no Spark needed)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from airflow_delta_provider.spark.read.arrow_conform import conform_array, constant, match_columns


def test_columns_match_exactly_first_then_case_insensitively():
    assert match_columns(["ID", "id", "Name"], ["id", "name", "missing", "NAME"]) == ["id", "Name", None, "Name"]


def test_missing_struct_fields_are_null_and_case_is_ignored():
    source = pa.array([{"A": 1}, None, {"A": 3}], pa.struct([("A", pa.int32())]))
    target = pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    out = conform_array(source, target)
    assert out.type.equals(target)
    assert out.to_pylist() == [{"a": 1, "b": None}, None, {"a": 3, "b": None}]


def test_sliced_lists_and_maps_keep_their_rows():
    lists = pa.array([[1], [2, 3], None, [4]], pa.list_(pa.int32())).slice(1)
    target = pa.list_(pa.field("element", pa.int64(), nullable=True))
    assert conform_array(lists, target).to_pylist() == [[2, 3], None, [4]]
    maps = pa.array([[("a", 1)], None, [("b", 2), ("c", 3)], []], pa.map_(pa.string(), pa.int32())).slice(1)
    target = pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.int64(), nullable=True))
    out = conform_array(maps, target)
    assert out.type.equals(target)
    assert out.to_pylist() == [None, [("b", 2), ("c", 3)], []]


def test_nested_structs_in_lists_gain_missing_fields():
    source = pa.array([[{"x": 1}], [{"x": 2}, None]], pa.list_(pa.struct([("x", pa.int32())])))
    target = pa.list_(pa.field("element", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.bool_())])))
    assert conform_array(source, target).to_pylist() == [[{"x": 1, "y": None}], [{"x": 2, "y": None}, None]]


@pytest.mark.parametrize(
    "array, target, expected",
    [
        (pa.array([1, None], pa.int32()), pa.int64(), [1, None]),
        (pa.array([1500], pa.timestamp("ns")), pa.timestamp("us", tz="UTC"),
         [dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc)]),
        (pa.array([1], pa.timestamp("ms", tz="UTC")), pa.timestamp("us", tz="UTC"),
         [dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=dt.timezone.utc)]),
        (pa.array([decimal.Decimal("1.5")], pa.decimal128(5, 1)), pa.decimal128(10, 2), [decimal.Decimal("1.50")]),
        (pa.array(["a", "b", "a"]).dictionary_encode(), pa.string(), ["a", "b", "a"]),
        (pa.nulls(2), pa.struct([("a", pa.int32())]), [None, None]),
    ],
    ids=["int-widening", "int96-nanos", "millis", "decimal-widening", "dictionary", "null-type"],
)
def test_primitive_conversions(array, target, expected):
    out = conform_array(array, target)
    assert out.type.equals(target) and out.to_pylist() == expected


def test_constants():
    assert constant(None, pa.int32(), 2).to_pylist() == [None, None]
    ts = dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    out = constant(ts, pa.timestamp("us", tz="UTC"), 3)
    assert out.type == pa.timestamp("us", tz="UTC") and out.to_pylist() == [ts] * 3
