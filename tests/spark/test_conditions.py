"""spark/conditions.py: SQL checked by Spark's analyser against the table
schema before any write, and row invariants enforced during a write."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.spark import conditions as c

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {
            "name": "name",
            "type": "string",
            "nullable": True,
            "metadata": {"delta.invariants": json.dumps({"expression": {"expression": "length(name) > 1"}})},
        },
        {"name": "price", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {"type": "struct", "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
    ],
}


@pytest.mark.parametrize("cond", ["id > 1", "ID = 2 AND name LIKE 'a%'", "s.x IS NULL", "price > 1.5"])
def test_good_conditions_resolve(spark, cond):
    assert c.parse_condition(spark, SCHEMA, cond) is not None


def test_no_condition_is_every_row(spark):
    assert c.parse_condition(spark, SCHEMA, None) is None


@pytest.mark.parametrize(
    "cond, fragment",
    [
        ("nope > 1", "nope"),  # unknown column, named
        ("id >", "Syntax error"),
        ("id + 1", "not boolean"),
        ("NULL", "not boolean"),
        ("count(id) > 1", "WHERE"),  # aggregates are not row conditions
        ("   ", "empty"),
    ],
)
def test_bad_conditions_name_the_problem(spark, cond, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        c.parse_condition(spark, SCHEMA, cond)


def test_assignments_are_case_insensitive_and_cast(spark):
    cols = c.parse_assignments(spark, SCHEMA, {"NAME": "upper(name)", "price": "1.234"})
    assert list(cols) == ["name", "price"]
    frame = c.empty_frame(spark, SCHEMA)
    types = frame.select(*(col.alias(n) for n, col in cols.items())).schema
    assert types["price"].dataType.simpleString() == "decimal(10,2)"
    assert types["name"].dataType.simpleString() == "string"


@pytest.mark.parametrize(
    "sets, fragment",
    [
        ({"zz": "1"}, "unknown column 'zz'"),
        ({"id": "nope"}, "nope"),
        ({"id": "id +"}, "Syntax error"),
        ({"id": "1", "ID": "2"}, "more than once"),
        ({}, "at least one"),
        ({"id": " "}, "empty"),
    ],
)
def test_bad_assignments(spark, sets, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        c.parse_assignments(spark, SCHEMA, sets)


def test_a_lost_server_during_analysis_is_not_reported_as_bad_input() -> None:
    """A Connect server killed while a condition is analysed (seen in CI): the
    error passes unchanged, so the command reports the engine as unavailable
    (a retry may help), not the condition as invalid (no retry)."""
    from pyspark.errors import PySparkException

    from airflow_delta_provider.delta.errors import InvalidInputError
    from airflow_delta_provider.spark.conditions import analyse

    lost = PySparkException(message='<_InactiveRpcError: status = StatusCode.UNAVAILABLE details = "Socket closed">')
    bad = PySparkException(message="[UNRESOLVED_COLUMN] A column `x` cannot be resolved.")

    def raising(exc: Exception):
        def build():
            raise exc

        return build

    with pytest.raises(PySparkException) as raised:
        analyse("condition", "x > 1", raising(lost))
    assert raised.value is lost
    with pytest.raises(InvalidInputError, match=r"invalid condition 'x > 1': .UNRESOLVED_COLUMN"):
        analyse("condition", "x > 1", raising(bad))


# --- Pre-flight (delta/expressions/resolve.py) agrees with Spark's analysis -------------------------

#: The names of tests/delta/expressions/test_resolve.py, typed so that Spark analyses its inputs.
PREFLIGHT_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": name, "type": kind, "nullable": True, "metadata": {}}
        for name, kind in [
            ("id", "long"),
            ("status", "string"),
            ("updated_at", "timestamp"),
            ("Mixed Case", "long"),
            ("we`ird", "long"),
            ("a.b", "long"),
            ("s", {"type": "struct", "fields": [{"name": "x", "type": {"type": "struct", "fields": [
                {"name": "y", "type": "long", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}}]}),
            ("Größe", "long"),
            ("col-1a", "long"),
        ]
    ],
}  # fmt: skip


def _preflight_valid() -> list[str]:
    from tests.delta.expressions.test_resolve import VALID

    # The file metadata column exists on a file scan only; ``s:a`` reads a variant.
    return [sql for sql in VALID if not sql.startswith(("_metadata", "s:a"))]


@pytest.mark.parametrize("sql", _preflight_valid())
def test_what_preflight_passes_spark_accepts(spark, sql):
    from airflow_delta_provider.delta.expressions.resolve import check_columns

    check_columns(sql, "condition", PREFLIGHT_SCHEMA)
    assert c.parse_condition(spark, PREFLIGHT_SCHEMA, sql) is not None


@pytest.mark.parametrize(
    "sql",
    [
        "`Mixed  Case` = 1",
        "`current_date` = 1",
        "t.id = 1",
        "transform(array(1), x -> x + idd)[0] > 0",
        "upper(nope) = 'A'",
        "a AND AND b",
        "id = 1 AND AND id = 2",
        "id IN (1, 2",
        "(id = 1",
        "id =",
    ],
)
def test_what_preflight_refuses_spark_refuses(spark, sql):
    from airflow_delta_provider.delta.expressions.resolve import check_columns

    with pytest.raises(InvalidInputError):
        check_columns(sql, "condition", PREFLIGHT_SCHEMA)
    with pytest.raises(InvalidInputError):
        c.parse_condition(spark, PREFLIGHT_SCHEMA, sql)
