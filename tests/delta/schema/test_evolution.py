"""Tests for :mod:`airflow_delta_provider.delta.schema.evolution`: enforcement
(append without ``merge_schema``) and ``merge_schema``, and the hints their
errors give."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.schema import evolution
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
    # A short diff: the differing columns named first, one line each; neither whole schema.
    assert tree_string(table) not in message and tree_string(data) not in message
    header, *problems = message.splitlines()
    assert header.endswith(":") and " column" in header
    assert problems and all(line.startswith("  - column") for line in problems)
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
def test_enforce_refuses_naming_the_column_first(data, named):
    message = _mismatch(TABLE, data)
    assert f"column {named}:" in message and named in message.splitlines()[0]


def test_enforce_reports_every_difference():
    data = struct(field("id", "string"), field("x", "long"), field("y", "long"))
    message = _mismatch(TABLE, data)
    assert "column id:" in message and "columns x, y:" in message
    assert message.splitlines()[0] == "Schema mismatch writing to the Delta table in 3 columns (x, y, id):"


def test_a_mismatch_reads_as_one_short_line_where_one_line_is_needed():
    """The CLI's and the task's one-line error: the columns first, then each difference, no schema dump."""
    from airflow_delta_provider.delta.errors import one_line

    names = ["order_id", "customer", "amount", "status", "updated_at", "day"]
    table = struct(*(field(n, "long" if n == "order_id" else "string") for n in names))
    data = struct(*(field(n, "string") for n in names), field("channel", "string"))
    line = one_line(_mismatch(table, data))
    assert line.startswith("Schema mismatch writing to the Delta table in 2 columns (channel, order_id): | column channel:")
    assert " | column order_id: type string in the data, long in the table; cast " in line
    assert "customer" not in line and len(line) < 400


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
    message = _mismatch(struct(field("d", "decimal(10,2)")), struct(field("d", "decimal(12,4)")), check=merge_schemas)
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


# --- Hints: each fits its problem, in the operator's argument names -------------------------


def _problems(message: str) -> list[str]:
    return [line[4:] for line in message.splitlines() if line.startswith("  - ")]


def _problem(table: dict, data: dict, check=enforce_schema, **kwargs) -> str:
    """The one problem line of the error ``check`` raises."""
    with pytest.raises(SchemaMismatchError) as err:
        check(table, data, **kwargs)
    (line,) = _problems(str(err.value))
    assert "mergeSchema" not in str(err.value) and "overwriteSchema" not in str(err.value)
    return line


def test_extra_columns_are_named_with_the_merge_schema_hint():
    one = _problem(TABLE, struct(field("id", "long"), field("extra", "string")))
    assert one == "column extra: not in the table schema; to add it, write with merge_schema=True"
    nested = struct(field("id", "long"), field("x", "long"), field("info", struct(field("planet", "string"))))
    assert _problem(TABLE, nested) == (
        "columns x, info.planet: not in the table schema; to add them, write with merge_schema=True"
    )


def test_a_type_clash_names_both_types_and_hints_cast_or_overwrite_not_merge_schema():
    line = _problem(TABLE, struct(field("id", "string")))
    assert line == (
        "column id: type string in the data, long in the table; cast the source column id to long, "
        'or replace the table, schema included, with mode="overwrite" and overwrite_schema=True'
    )
    assert "merge_schema" not in line and "To add columns" not in line and "enableTypeWidening" not in line


@pytest.mark.parametrize(
    ("table_type", "data_type"),
    [
        ("integer", "long"),
        ("byte", "long"),
        ("float", "double"),
        ("date", "timestamp_ntz"),
        ("decimal(10,2)", "decimal(12,2)"),
    ],
)
def test_a_clash_type_widening_solves_names_delta_enable_type_widening(table_type, data_type):
    line = _problem(struct(field("c", table_type)), struct(field("c", data_type)))
    assert line.startswith(f"column c: type {data_type} in the data, {table_type} in the table; ")
    assert (
        "set the table property delta.enableTypeWidening=true and write with merge_schema=True "
        f"to widen c from {table_type} to {data_type}, or cast the source column c to {table_type}, "
        'or replace the table, schema included, with mode="overwrite" and overwrite_schema=True'
    ) in line


def test_with_type_widening_on_the_hint_is_merge_schema():
    line = _problem(struct(field("c", "integer")), struct(field("c", "long")), type_widening=True)
    assert (
        "write with merge_schema=True to widen c from integer to long (the table has delta.enableTypeWidening=true)"
        in line
    )
    assert "set the table property" not in line


@pytest.mark.parametrize(
    ("table_type", "data_type", "fix"),
    [
        ("short", "integer", "write with merge_schema=True to widen c from short to integer"),
        ("integer", "byte", "write with merge_schema=True to store it as integer"),
    ],
)
def test_a_clash_merge_schema_alone_solves_needs_no_type_widening(table_type, data_type, fix):
    line = _problem(struct(field("c", table_type)), struct(field("c", data_type)))
    assert f"; {fix}, or cast the source column c to {table_type}" in line
    assert "enableTypeWidening" not in line


@pytest.mark.parametrize(
    ("table_type", "data_type"),
    [("integer", "double"), ("long", "integer"), ("long", "decimal(20,0)"), ("timestamp", "timestamp_ntz")],
)
def test_a_clash_no_widening_solves_hints_no_widening(table_type, data_type):
    line = _problem(struct(field("c", table_type)), struct(field("c", data_type)), type_widening=True)
    assert "enableTypeWidening" not in line and "merge_schema" not in line
    assert f"cast the source column c to {table_type}" in line


def test_a_missing_not_null_column_says_what_it_requires():
    expected = (
        "column id: missing from the data, but the table column is NOT NULL; "
        "add id to the source, with a value in every row"
    )
    assert _problem(TABLE, struct(field("name", "string"))) == expected
    assert _problem(TABLE, struct(field("name", "string")), check=merge_schemas) == expected


def test_against_a_declared_table_schema_the_hints_point_at_it():
    declared = struct(field("id", "long", nullable=False), field("v", "long"))
    assert _problem(declared, struct(field("v", "long")), declared=True) == (
        "column id: missing from the data, but the table column is NOT NULL; "
        "add id to the source, or declare it nullable in table_schema"
    )
    assert _problem(declared, struct(field("id", "integer")), declared=True) == (
        "column id: type integer in the data, long in the table; "
        "cast the source column id to long, or declare id as integer in table_schema"
    )
    assert _problem(declared, struct(field("id", "long"), field("x", "long")), declared=True) == (
        "column x: not in the declared table_schema; add it to table_schema, or drop it from the source"
    )


def test_merge_type_clash_hints_a_cast_and_overwrite_only_where_the_operation_can():
    table, data = struct(field("id", "long")), struct(field("id", "string"))
    clash = "column id: cannot merge type string in the data into long in the table; cast the source column id to long"
    assert _problem(table, data, check=merge_schemas) == clash
    assert _problem(table, data, check=merge_schemas, can_overwrite=True) == (
        f'{clash}, or replace the table, schema included, with mode="overwrite" and overwrite_schema=True'
    )


def test_merge_widening_with_type_widening_off_names_the_property():
    line = _problem(struct(field("c", "integer")), struct(field("c", "long")), check=merge_schemas)
    assert line == (
        "column c: cannot widen integer in the table to long in the data: type widening is off; "
        "set the table property delta.enableTypeWidening=true to widen c from integer to long, "
        "or cast the source column c to integer"
    )


def test_merge_refusal_of_integer_to_double_names_merge_schema():
    line = _problem(
        struct(field("c", "integer")), struct(field("c", "double")), check=merge_schemas, type_widening=True
    )
    assert "merge_schema never turns an integer column into double or decimal" in line
    assert line.endswith("; cast the source column c to integer")


def test_the_hints_name_the_append_operators_own_arguments():
    import dataclasses
    import inspect

    from airflow_delta_provider.operations.append.spec import AppendSpec

    names = {evolution.MERGE_SCHEMA_ARG, evolution.OVERWRITE_SCHEMA_ARG, evolution.MODE_ARG, evolution.TABLE_SCHEMA_ARG}
    assert names <= {f.name for f in dataclasses.fields(AppendSpec)}
    operators = pytest.importorskip("airflow_delta_provider.operators.delta")
    assert names <= set(inspect.signature(operators.DeltaAppendOperator.__init__).parameters)
