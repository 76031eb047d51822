"""Type changes in the schema: which are widenings, and ``mergeSchema``
recording them in ``delta.typeChanges`` as delta-spark does."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.errors import SchemaMismatchError
from airflow_delta_provider.delta.schema.evolution import merge_schemas
from airflow_delta_provider.delta.schema.types import struct_field, struct_type
from airflow_delta_provider.delta.schema.widening import TYPE_CHANGES_KEY as KEY
from airflow_delta_provider.delta.schema.widening import all_changes, is_supported, widens_on_merge


def _schema(**types) -> dict:
    return struct_type(struct_field(name, t) for name, t in types.items())


def _array(element) -> dict:
    return {"type": "array", "elementType": element, "containsNull": True}


def _map(key, value) -> dict:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}


# --- The rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("from_type", "to_type", "supported", "on_merge"),
    [
        ("byte", "short", True, True),
        ("byte", "long", True, True),
        ("integer", "long", True, True),
        ("long", "integer", False, False),
        ("float", "double", True, True),
        ("double", "float", False, False),
        ("integer", "double", True, False),  # supported, but only by an explicit change
        ("long", "double", False, False),
        ("date", "timestamp_ntz", True, True),
        ("date", "timestamp", False, False),
        ("decimal(10,2)", "decimal(12,2)", True, True),
        ("decimal(10,2)", "decimal(12,4)", True, True),  # k1 = k2 = 2
        ("decimal(10,2)", "decimal(11,3)", True, True),  # k1 = k2 = 1
        ("decimal(10,1)", "decimal(11,3)", False, False),  # an integer digit lost
        ("decimal(10,2)", "decimal(10,1)", False, False),
        ("decimal(10, 2)", "decimal(20,5)", True, True),
        ("integer", "decimal(10,0)", True, False),
        ("integer", "decimal(11,1)", True, False),
        ("integer", "decimal(9,0)", False, False),
        ("long", "decimal(20,0)", True, False),
        ("long", "decimal(20,1)", False, False),
        ("integer", "string", False, False),
        ("string", "integer", False, False),
    ],
)
def test_supported_changes_follow_the_protocol_and_merge_takes_a_subset(from_type, to_type, supported, on_merge):
    assert is_supported(from_type, to_type) is supported
    assert widens_on_merge(from_type, to_type) is on_merge


# --- Merging with type widening ------------------------------------------------------


def test_merge_widens_and_records_each_change_as_delta_spark_does():
    table = _schema(i="integer", f="float", d="date", m="decimal(10,2)", b="byte", s="string")
    data = _schema(i="long", f="double", d="timestamp_ntz", m="decimal(12,4)", b="integer", s="string")
    merged = merge_schemas(table, data, type_widening=True)
    by_name = {f["name"]: f for f in merged["fields"]}
    assert [f["type"] for f in merged["fields"]] == [
        "long",
        "double",
        "timestamp_ntz",
        "decimal(12,4)",
        "integer",
        "string",
    ]
    assert by_name["i"]["metadata"] == {KEY: [{"fromType": "integer", "toType": "long"}]}
    assert by_name["m"]["metadata"] == {KEY: [{"fromType": "decimal(10,2)", "toType": "decimal(12,4)"}]}
    assert by_name["b"]["metadata"] == {KEY: [{"fromType": "byte", "toType": "integer"}]}
    assert by_name["s"]["metadata"] == {}


def test_nested_changes_are_recorded_on_the_nearest_struct_field_with_their_path():
    table = _schema(
        s=struct_type([struct_field("a", "integer")]),
        m=_map("integer", "float"),
        a=_array(_array("short")),
        e=_array(struct_type([struct_field("x", "date")])),
    )
    data = _schema(
        s=struct_type([struct_field("a", "long")]),
        m=_map("long", "double"),
        a=_array(_array("integer")),
        e=_array(struct_type([struct_field("x", "timestamp_ntz")])),
    )
    merged = merge_schemas(table, data, type_widening=True)
    s, m, a, e = merged["fields"]
    assert s["metadata"] == {}
    assert s["type"]["fields"][0]["metadata"] == {KEY: [{"fromType": "integer", "toType": "long"}]}
    assert m["metadata"][KEY] == [
        {"fromType": "integer", "toType": "long", "fieldPath": "key"},
        {"fromType": "float", "toType": "double", "fieldPath": "value"},
    ]
    assert a["metadata"][KEY] == [{"fromType": "short", "toType": "integer", "fieldPath": "element.element"}]
    assert e["metadata"] == {}  # the struct inside the array records its own field's change
    assert e["type"]["elementType"]["fields"][0]["metadata"][KEY] == [{"fromType": "date", "toType": "timestamp_ntz"}]
    assert {(p, c.field_path) for p, c in all_changes(merged)} == {
        (("s", "a"), ()),
        (("m",), ("key",)),
        (("m",), ("value",)),
        (("a",), ("element", "element")),
        (("e", "element", "x"), ()),
    }


def test_a_second_widening_appends_to_the_history_and_keeps_other_metadata():
    once = merge_schemas(_schema(c="short"), _schema(c="integer"), type_widening=True)
    once["fields"][0]["metadata"]["comment"] = "kept"
    twice = merge_schemas(once, _schema(c="long"), type_widening=True)
    assert twice["fields"][0]["metadata"] == {
        "comment": "kept",
        KEY: [{"fromType": "short", "toType": "integer"}, {"fromType": "integer", "toType": "long"}],
    }
    # Data of the table's type changes nothing.
    assert merge_schemas(twice, _schema(c="long"), type_widening=True) == twice


def test_without_type_widening_a_widening_is_refused_with_the_diff():
    table = _schema(id="long", amount="integer", price="decimal(10,2)")
    data = _schema(id="long", amount="long", price="decimal(12,2)")
    with pytest.raises(SchemaMismatchError) as err:
        merge_schemas(table, data)
    text = str(err.value)
    assert "column amount: cannot widen integer in the table to long in the data" in text
    assert "column price: cannot widen decimal(10,2) in the table to decimal(12,2) in the data" in text
    assert "delta.enableTypeWidening=true" in text
    assert text.startswith("Cannot merge the data schema into the table schema in 2 columns (amount, price):")
    assert " |-- " not in text  # the differing columns, not both schemas whole


def test_without_type_widening_byte_short_integer_still_merge_silently():
    merged = merge_schemas(_schema(c="byte"), _schema(c="integer"))
    assert merged == _schema(c="integer")  # delta-spark's old rule: same parquet type, no history


@pytest.mark.parametrize(
    ("from_type", "to_type", "says"),
    [
        ("integer", "double", "never turns an integer column into double or decimal"),
        ("long", "decimal(20,0)", "never turns an integer column into double or decimal"),
        ("decimal(10,1)", "decimal(11,3)", "may only widen, keeping its integer digits"),
        ("long", "integer", "cannot merge type integer in the data into long"),
        ("integer", "string", "cannot merge type string in the data into integer"),
    ],
)
def test_with_type_widening_other_changes_are_still_refused(from_type, to_type, says):
    with pytest.raises(SchemaMismatchError, match=says.replace("(", r"\(").replace(")", r"\)")):
        merge_schemas(_schema(c=from_type), _schema(c=to_type), type_widening=True)
