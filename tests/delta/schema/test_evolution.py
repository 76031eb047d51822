"""Tests for :mod:`airflow_delta_provider.delta.schema.evolution`: enforcement
(append without ``mergeSchema``) and ``mergeSchema``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.schema.display import tree_string
from airflow_delta_provider.delta.schema.evolution import enforce_schema, merge_schemas
from airflow_delta_provider.delta.schema.fields import column_names, field_by_name
from airflow_delta_provider.delta.schema.types import as_nullable
from tests.delta.schema.builders import SCHEMAS, array, field, map_, struct

TABLE = struct(
    field("id", "long", nullable=False),
    field("name", "string"),
    field("info", struct(field("city", "string"), field("zip", "integer"))),
    field("tags", array(struct(field("k", "string"), field("v", "double")))),
    field("attrs", map_("string", "decimal(10,2)")),
)


def test_enforce_accepts_the_same_schema_and_ignores_nullability():
    enforce_schema(TABLE, TABLE)
    enforce_schema(TABLE, as_nullable(TABLE))  # nullable data into NOT NULL is a row check
    relaxed = struct(field("id", "long"), field("name", "string", nullable=False))
    enforce_schema(struct(field("id", "long", False), field("name", "string")), relaxed)


def test_enforce_accepts_missing_nullable_columns_at_any_depth():
    data = struct(
        field("id", "long"),
        field("info", struct(field("zip", "integer"))),
        field("tags", array(struct(field("k", "string")))),
    )
    enforce_schema(TABLE, data)


def _mismatch(table: dict, data: dict, check=enforce_schema) -> str:
    with pytest.raises(SchemaMismatchError) as err:
        check(table, data)
    message = str(err.value)
    assert tree_string(table) in message and tree_string(data) in message
    return message


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (struct(field("id", "long"), field("extra", "string")), "extra"),
        (struct(field("id", "long"), field("info", struct(field("planet", "string")))), "info.planet"),
        (struct(field("id", "long"), field("tags", array(struct(field("w", "long"))))), "tags.element.w"),
        (struct(field("ID", "long")), "ID"),
        (struct(field("id", "long"), field("info", struct(field("City", "string")))), "info.City"),
        (struct(field("id", "integer")), "id"),
        (struct(field("id", "long"), field("info", "string")), "info"),
        (struct(field("id", "long"), field("info", struct(field("zip", "long")))), "info.zip"),
        (struct(field("id", "long"), field("tags", array("string"))), "tags.element"),
        (struct(field("id", "long"), field("tags", array(struct(field("v", "float"))))), "tags.element.v"),
        (struct(field("id", "long"), field("attrs", map_("string", "decimal(10,3)"))), "attrs.value"),
        (struct(field("id", "long"), field("attrs", map_("long", "decimal(10,2)"))), "attrs.key"),
        (struct(field("name", "string")), "id"),  # NOT NULL column left out
        (struct(field("id", "timestamp_ntz")), "id"),
    ],
)
def test_enforce_refuses_with_both_trees_and_the_column(data, named):
    message = _mismatch(TABLE, data)
    assert f"column {named}:" in message


def test_enforce_reports_every_difference():
    data = struct(field("id", "string"), field("x", "long"), field("y", "long"))
    message = _mismatch(TABLE, data)
    assert all(f"column {c}:" in message for c in ("id", "x", "y"))


def test_enforce_refuses_duplicate_data_columns():
    with pytest.raises(InvalidInputError, match="duplicate"):
        enforce_schema(TABLE, struct(field("id", "long"), field("Id", "long")))


def test_enforce_refuses_missing_nested_not_null_field():
    table = struct(field("s", struct(field("must", "long", nullable=False), field("may", "long"))))
    assert "column s.must:" in _mismatch(table, struct(field("s", struct(field("may", "long")))))


def test_merge_appends_new_fields_at_the_end_as_nullable():
    data = struct(
        field("new_top", struct(field("q", "long", nullable=False)), nullable=False),
        field("info", struct(field("country", "string", nullable=False), field("city", "string"))),
        field("id", "long"),
    )

    merged = merge_schemas(TABLE, data)

    assert column_names(merged) == column_names(TABLE) + ["new_top"]
    info = field_by_name(merged, "info")["type"]
    assert column_names(info) == ["city", "zip", "country"]
    assert field_by_name(info, "country")["nullable"] is True
    new_top = field_by_name(merged, "new_top")
    assert new_top["nullable"] and new_top["type"]["fields"][0]["nullable"]


def test_merge_keeps_table_name_nullability_and_metadata():
    table = struct(field("Id", "long", nullable=False, metadata={"comment": "key"}))
    data = struct(field("ID", "long", nullable=True, metadata={"comment": "other"}), field("x", "long"))

    merged = merge_schemas(table, data)

    assert merged["fields"][0] == table["fields"][0]
    assert merged["fields"][1] == field("x", "long")


def test_merge_of_identical_schemas_is_identity():
    assert merge_schemas(TABLE, TABLE) == TABLE


def test_merge_arrays_and_maps_element_wise_keeping_table_null_flags():
    table = struct(
        field("a", array(struct(field("x", "long")), contains_null=False)),
        field("m", map_("string", struct(field("x", "long")), value_contains_null=False)),
    )
    data = struct(
        field("a", array(struct(field("x", "long"), field("y", "string")))),
        field("m", map_("string", struct(field("y", "date")))),
    )

    merged = merge_schemas(table, data)

    a, m = merged["fields"][0]["type"], merged["fields"][1]["type"]
    assert a["containsNull"] is False and column_names(a["elementType"]) == ["x", "y"]
    assert m["valueContainsNull"] is False and column_names(m["valueType"]) == ["x", "y"]


@pytest.mark.parametrize(
    ("table_type", "data_type", "merged"),
    [
        ("byte", "short", "short"),
        ("byte", "integer", "integer"),
        ("short", "integer", "integer"),
        ("integer", "byte", "integer"),
        ("short", "byte", "short"),
        ("integer", "short", "integer"),
        ("void", "long", "long"),
        ("decimal(5,1)", "void", "decimal(5,1)"),
        ("void", array(struct(field("x", "long", False)), False), array(struct(field("x", "long")))),
    ],
)
def test_merge_widens_integrals_and_fills_void(table_type, data_type, merged):
    result = merge_schemas(struct(field("c", table_type)), struct(field("c", data_type)))
    assert result == struct(field("c", merged))


@pytest.mark.parametrize(
    ("table_type", "data_type"),
    [
        ("integer", "long"),
        ("long", "integer"),
        ("float", "double"),
        ("string", "integer"),
        ("timestamp", "timestamp_ntz"),
        ("decimal(10,2)", "decimal(12,2)"),
        ("decimal(10,2)", "decimal(10,3)"),
        ("decimal(10,2)", "integer"),
        (struct(field("x", "long")), "long"),
        (array("long"), map_("long", "long")),
    ],
)
def test_merge_refuses_other_type_changes(table_type, data_type):
    table = struct(field("id", "long"), field("s", struct(field("deep", table_type))))
    data = struct(field("s", struct(field("deep", data_type))))
    message = _mismatch(table, data, check=merge_schemas)
    assert "column s.deep:" in message


def test_merge_decimal_message_says_what_changed():
    message = _mismatch(struct(field("d", "decimal(10,2)")), struct(field("d", "decimal(12,4)")),
                        check=merge_schemas)
    assert "decimal(10,2)" in message and "decimal(12,4)" in message


def test_merge_refuses_missing_not_null_column():
    table = struct(field("id", "long", nullable=False), field("v", "long"))
    assert "column id:" in _mismatch(table, struct(field("v", "long")), check=merge_schemas)


def test_merge_refuses_bad_new_names():
    with pytest.raises(InvalidInputError, match="duplicate"):
        merge_schemas(TABLE, struct(field("id", "long"), field("new", "long"), field("NEW", "long")))
    with pytest.raises(InvalidInputError, match="new col"):
        merge_schemas(TABLE, struct(field("id", "long"), field("new col", "long")))


def test_merged_schema_accepts_the_data_it_was_merged_with():
    data = struct(field("id", "long"), field("info", struct(field("zip", "integer"), field("geo", "string"))))
    merged = merge_schemas(TABLE, data)
    enforce_schema(merged, data)
    with pytest.raises(SchemaMismatchError):
        enforce_schema(TABLE, data)


@settings(max_examples=100, deadline=None)
@given(SCHEMAS)
def test_property_a_schema_fits_and_merges_with_itself(schema):
    enforce_schema(schema, schema)
    assert merge_schemas(schema, schema) == schema
