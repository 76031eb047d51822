"""Tests for :mod:`airflow_delta_provider.delta.schema.arrow`.

Oracles: the golden tables' own ``schemaString`` (written by delta-spark) and
the Arrow schema ``deltalake`` (delta-rs) derives from the same tables.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings

from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.schema.arrow import from_arrow_schema, from_arrow_type, to_arrow_schema, to_arrow_type
from airflow_delta_provider.delta.schema.types import schema_string
from tests.delta.schema.builders import GOLDEN_SCHEMA_TABLES, SCHEMAS, array, field, golden_metadata, map_, struct


@pytest.mark.parametrize("table", GOLDEN_SCHEMA_TABLES)
def test_golden_schema_string_round_trips_through_arrow(golden_dir, table):
    written = golden_metadata(golden_dir, table)["schemaString"]
    schema = json.loads(written)

    back = from_arrow_schema(to_arrow_schema(schema))

    assert back == schema
    assert schema_string(back) == written


@pytest.mark.parametrize("table", GOLDEN_SCHEMA_TABLES)
def test_golden_arrow_schema_matches_delta_rs(golden_dir, table):
    deltalake = pytest.importorskip("deltalake")
    try:
        theirs = pa.schema(deltalake.DeltaTable(str(golden_dir / table)).schema().to_arrow())
    except Exception as exc:  # a delta-rs limitation, not ours
        pytest.skip(f"deltalake cannot open {table}: {exc}")
    schema = json.loads(golden_metadata(golden_dir, table)["schemaString"])

    ours = to_arrow_schema(schema)

    assert ours.equals(theirs), f"\nours:\n{ours}\ndelta-rs:\n{theirs}"
    assert from_arrow_schema(theirs) == schema


@pytest.mark.parametrize(
    ("delta_type", "arrow_type"),
    [
        ("string", pa.string()),
        ("long", pa.int64()),
        ("integer", pa.int32()),
        ("short", pa.int16()),
        ("byte", pa.int8()),
        ("float", pa.float32()),
        ("double", pa.float64()),
        ("boolean", pa.bool_()),
        ("binary", pa.binary()),
        ("date", pa.date32()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestamp_ntz", pa.timestamp("us")),
        ("decimal(10,2)", pa.decimal128(10, 2)),
        ("decimal(38,0)", pa.decimal128(38, 0)),
        ("decimal(12, 3)", pa.decimal128(12, 3)),
    ],
)
def test_primitive_to_arrow_and_back(delta_type, arrow_type):
    assert to_arrow_type(delta_type) == arrow_type
    assert from_arrow_type(arrow_type) == delta_type.replace(" ", "")


def test_nullability_is_carried_at_every_level():
    schema = struct(
        field("s", struct(field("inner", "long", nullable=False)), nullable=False),
        field("a", array("integer", contains_null=False)),
        field("m", map_("string", "double", value_contains_null=False)),
    )

    arrow = to_arrow_schema(schema)

    assert not arrow.field("s").nullable
    assert not arrow.field("s").type.field("inner").nullable
    assert arrow.field("a").nullable and not arrow.field("a").type.value_field.nullable
    assert not arrow.field("m").type.item_field.nullable
    assert not arrow.field("m").type.key_field.nullable  # Delta map keys are never null
    assert from_arrow_schema(arrow) == schema


def test_field_metadata_survives_arrow():
    meta = {
        "comment": "123",  # a string that looks like a number stays a string
        "delta.invariants": '{"expression":{"expression":"x > 3"}}',
        "delta.columnMapping.id": 7,
        "flags": [True, None],
    }
    schema = struct(field("x", "integer", metadata=meta))

    arrow = to_arrow_schema(schema)

    assert arrow.field("x").metadata
    assert from_arrow_schema(arrow) == schema
    assert to_arrow_schema(schema, metadata=False).field("x").metadata is None


@pytest.mark.parametrize("bad", ["void", "interval", "char(3)"])
def test_unsupported_delta_type_names_type_and_column(bad):
    with pytest.raises(UnsupportedFeatureError, match=bad.replace("(", r"\(").replace(")", r"\)")):
        to_arrow_type(bad)
    with pytest.raises(UnsupportedFeatureError, match="col_x"):
        to_arrow_schema(struct(field("ok", "long"), field("col_x", array(bad))))


@pytest.mark.parametrize("bad", ["decimal(39,0)", "decimal(5,6)", "decimal(0,0)", "decimal(a,b)"])
def test_invalid_decimals_are_refused(bad):
    with pytest.raises(InvalidInputError, match="decimal"):
        to_arrow_type(bad)


@pytest.mark.parametrize(
    ("arrow_type", "delta_type"),
    [
        (pa.large_string(), "string"),
        (pa.string_view(), "string"),
        (pa.large_binary(), "binary"),
        (pa.binary(16), "binary"),
        (pa.dictionary(pa.int32(), pa.string()), "string"),
        (pa.dictionary(pa.int8(), pa.int64()), "long"),
        (pa.date64(), "date"),
        (pa.float16(), "float"),
        (pa.uint8(), "short"),
        (pa.uint16(), "integer"),
        (pa.uint32(), "long"),
        (pa.uint64(), "decimal(20,0)"),
        (pa.decimal256(20, 4), "decimal(20,4)"),
        (pa.null(), "void"),
        (pa.timestamp("s", tz="America/New_York"), "timestamp"),
        (pa.timestamp("ns", tz="UTC"), "timestamp"),
        (pa.timestamp("ms"), "timestamp_ntz"),
        (pa.timestamp("ns"), "timestamp_ntz"),
        (pa.large_list(pa.int32()), array("integer")),
        (pa.list_(pa.field("x", pa.int32(), nullable=False), 3), array("integer", False)),
    ],
)
def test_arrow_types_without_exact_delta_match(arrow_type, delta_type):
    assert from_arrow_type(arrow_type) == delta_type


@pytest.mark.parametrize(
    "arrow_type", [pa.time64("us"), pa.duration("s"), pa.month_day_nano_interval(), pa.decimal256(40, 2)]
)
def test_arrow_types_with_no_delta_type_name_the_column(arrow_type):
    with pytest.raises(InvalidInputError, match="when"):
        from_arrow_schema(pa.schema([pa.field("id", pa.int64()), pa.field("when", arrow_type)]))


def test_from_arrow_keeps_only_delta_metadata():
    arrow = pa.schema([pa.field("a", pa.int32(), metadata={"PARQUET:field_id": "1", "comment": '"hi"',
                                                            "junk": "not json"})])

    assert from_arrow_schema(arrow)["fields"][0]["metadata"] == {"comment": "hi"}
    assert from_arrow_schema(arrow, metadata=False)["fields"][0]["metadata"] == {}


@settings(max_examples=150, deadline=None)
@given(SCHEMAS)
def test_property_arrow_round_trip_is_lossless(schema):
    assert from_arrow_schema(to_arrow_schema(schema)) == schema
    assert json.loads(schema_string(schema)) == schema
