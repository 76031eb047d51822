"""Tests for delta/expressions/parse.py: SQL text to the typed tree, and the
helpers every reader of SQL shares."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions import tree as t
from airflow_delta_provider.delta.expressions.parse import (
    Predicate,
    column_equality,
    column_references,
    conjuncts,
    literal,
    nondeterministic_calls,
    parse_sql,
    referenced_columns,
    sql_literal,
    term,
    unqualified_sql,
)
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

PARTS = ["p", "region"]


def tree(sql: str):
    return Predicate.parse(sql).tree


def cmp(column: str, op: str, kind: str, value) -> t.Comparison:
    return t.Comparison(column, op, t.Literal(kind, value))


# --- Conditions ----------------------------------------------------------------


@pytest.mark.parametrize("condition", ["id = ", "id = 1 and", "(id", "", "   "])
def test_syntax_errors_name_the_condition(condition):
    with pytest.raises(InvalidInputError) as err:
        Predicate.parse(condition)
    assert repr(condition) in str(err.value) or "empty" in str(err.value)


@pytest.mark.parametrize("condition", ["SELECT 1", "id = 1; DROP TABLE t", "id IN (SELECT id FROM t)"])
def test_statements_and_subqueries_are_refused(condition):
    with pytest.raises(InvalidInputError, match="condition"):
        Predicate.parse(condition)


def test_columns_and_partition_only():
    pred = Predicate.parse("P = 1 AND (`Region` IN ('eu') OR s.a > 2) AND f(Name) IS NULL")
    assert pred.sql == "P = 1 AND (`Region` IN ('eu') OR s.a > 2) AND f(Name) IS NULL"
    assert str(pred) == pred.sql
    assert pred.columns == {"P", "Region", "s", "Name"}
    assert not pred.is_partition_only(PARTS)
    assert Predicate.parse("P = 1 AND REGION <> 'x'").is_partition_only(PARTS)
    assert Predicate.parse("true").is_partition_only(PARTS)


def test_the_tree_is_lowered_once():
    pred = Predicate.parse("id = 1")
    assert pred.tree is pred.tree


# --- Lowering ------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("id = 1", cmp("id", "=", "int", 1)),
        ("id <> 1", cmp("id", "!=", "int", 1)),
        ("`Id` >= 1.50", cmp("Id", ">=", "decimal", Decimal("1.50"))),
        ("(id) < 1e3", cmp("id", "<", "double", 1000.0)),
        # the column goes left, the operator flips
        ("1 < id", cmp("id", ">", "int", 1)),
        ("-5 >= id", cmp("id", "<=", "int", -5)),
        ("'a' <=> name", cmp("name", "<=>", "string", "a")),
        ("id = 15L", cmp("id", "=", "int", 15)),
        ("x = 1.5D", cmp("x", "=", "double", 1.5)),
        ("day = DATE '2020-01-02'", cmp("day", "=", "date", "2020-01-02")),
        ("ts < TIMESTAMP '2020-01-02 03:04:05'", cmp("ts", "<", "timestamp", "2020-01-02 03:04:05")),
        ("flag", cmp("flag", "=", "bool", True)),
        ("id IS NULL", t.IsNull("id")),
        ("id IS NOT NULL", t.Not(t.IsNull("id"))),
        ("id <=> NULL", t.IsNull("id")),
        ("NULL <=> id", t.IsNull("id")),
        ("id = NULL", t.NULL),
        ("id = CAST(NULL AS INT)", t.NULL),
        ("NULL", t.NULL),
        ("true", t.TRUE),
        ("FALSE", t.FALSE),
        ("id BETWEEN 1 AND 2", t.And(cmp("id", ">=", "int", 1), cmp("id", "<=", "int", 2))),
        ("NOT (a = 1 OR b = 2)", t.Not(t.Or(cmp("a", "=", "int", 1), cmp("b", "=", "int", 2)))),
    ],
)
def test_lowering(sql, expected):
    assert tree(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "f(id) = 1",
        "id + 1 = 2",
        "name LIKE 'a%'",
        "id = p",
        "s.a = 1",
        "id IS TRUE",
        "(id = 1) = true",
        "id = CAST('x' AS INT)",
        "id = CAST(1 AS STRING)",
        "1 = 1",
    ],
)
def test_what_is_not_understood_is_unknown(sql):
    assert tree(sql) == t.UNKNOWN


def test_in_lists_become_a_balanced_or():
    got = tree("id IN (1, 2, 3, 4)")
    assert got == t.Or(
        t.Or(cmp("id", "=", "int", 1), cmp("id", "=", "int", 2)),
        t.Or(cmp("id", "=", "int", 3), cmp("id", "=", "int", 4)),
    )
    # NOT IN keeps its NULL: never true with a NULL in the list
    assert tree("id NOT IN (1, NULL)") == t.Not(t.Or(cmp("id", "=", "int", 1), t.NULL))
    deep = tree("id IN (" + ", ".join(map(str, range(5000))) + ")")
    assert _depth(deep) <= 14  # log2(5000) ~ 12.3: no recursion limit is near
    assert sum(isinstance(n, t.Comparison) for n in t.walk(deep)) == 5000


def _depth(node) -> int:
    if isinstance(node, (t.And, t.Or)):
        return 1 + max(_depth(node.left), _depth(node.right))
    if isinstance(node, t.Not):
        return 1 + _depth(node.child)
    return 0


def test_unknown_parts_stay_beside_known_ones():
    assert tree("id = 1 AND f(x) = 2") == t.And(cmp("id", "=", "int", 1), t.UNKNOWN)


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("NULL", t.NULL_LITERAL),
        ("-(2)", t.Literal("int", -2)),
        ("-'a'", None),
        ("CAST('12' AS BIGINT)", t.Literal("int", 12)),
        ("CAST(' 1.25 ' AS DECIMAL(5,2))", t.Literal("decimal", Decimal("1.25"))),
        ("CAST('1.5' AS DOUBLE)", t.Literal("double", 1.5)),
        ("CAST('0.1' AS FLOAT)", t.Literal("float", 0.10000000149011612)),  # rounded to single precision
        ("CAST('2020-01-01' AS DATE)", t.Literal("date", "2020-01-01")),
        ("CAST('2020-01-01 10:00' AS TIMESTAMP_NTZ)", t.Literal("timestamp_ntz", "2020-01-01 10:00")),
        ("CAST('x' AS INT)", None),  # Spark gives NULL or fails, by ANSI mode: not guessed
        ("CAST(1.5 AS INT)", None),  # Spark truncates; Python's int() refuses: not guessed
        ("CAST(1 AS DATE)", None),
        ("CAST(true AS INT)", None),
        ("CAST('a' AS BINARY)", None),
        ("id", None),
    ],
)
def test_literals(sql, expected):
    assert literal(parse_sql(sql)) == expected


# --- Generation expressions ----------------------------------------------------


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("ts", t.Column("ts")),
        ("(`ts`)", t.Column("ts")),
        ("CAST(ts AS DATE)", t.Call("date", t.Column("ts"))),
        ("to_date(ts)", t.Call("date", t.Column("ts"))),
        ("YEAR(ts)", t.Call("year", t.Column("ts"))),
        ("month(ts)", t.Call("month", t.Column("ts"))),
        ("dayofmonth(ts)", t.Call("day", t.Column("ts"))),
        ("hour(ts)", t.Call("hour", t.Column("ts"))),
        ("to_date(ts, 'yyyy')", None),
        ("year(ts) + 1", None),
        ("year(s.ts)", None),
        ("CAST(ts AS STRING)", None),
        ("not sql (", None),
        # to_date() is a date, whose hour is always 0: not the hour of ts
        ("hour(to_date(ts))", None),
    ],
)
def test_terms(sql, expected):
    assert term(sql) == expected


# --- Shared helpers --------------------------------------------------------------


def test_referenced_columns():
    assert referenced_columns("s.x > 1 AND ID = 2 OR `Name` LIKE 'a'") == {"s", "id", "name"}
    assert referenced_columns("1 = 1") == set()
    assert referenced_columns("id >") is None


def test_conjuncts_look_through_parentheses_but_not_into_or():
    assert [c.sql() for c in conjuncts(parse_sql("(a = 1 AND (b = 2 AND c = 3))"))] == ["a = 1", "b = 2", "c = 3"]
    assert len(conjuncts(parse_sql("a = 1 OR b = 2"))) == 1


def test_column_references_and_equality():
    assert column_references(parse_sql("t.id = s.id + k")) == [("t", "id"), ("s", "id"), ("k",)]
    assert column_equality(parse_sql("t.id = s.id")) == (("t", "id"), ("s", "id"))
    assert column_equality(parse_sql("t.id <=> s.id")) is None
    assert column_equality(parse_sql("t.id = s.id + 1")) is None
    assert column_equality(parse_sql("(t.id) = s.id")) is None


def test_unqualified_sql_renames_every_column_and_leaves_the_tree_alone():
    node = parse_sql("t.Day = '2024-05-01' AND t.x IN (1, 2)")
    got = unqualified_sql(node, lambda parts: parts[-1].upper())
    assert got == "`DAY` = '2024-05-01' AND `X` IN (1, 2)"
    assert column_references(node) == [("t", "Day"), ("t", "x")]


def test_quoting():
    assert quote_identifier("a b") == "`a b`"
    assert quote_identifier("we`ird") == "`we``ird`"
    assert Predicate.parse(f"{quote_identifier('we`ird')} = 1").columns == {"we`ird"}


@pytest.mark.parametrize(
    "value, sql",
    [
        (5, "5"),
        (-5, "-5"),
        (Decimal("1.50"), "1.50"),
        ("it's", "'it\\'s'"),
        (dt.date(2024, 5, 1), "CAST('2024-05-01' AS DATE)"),
        (True, None),
        (1.5, None),
        (dt.datetime(2024, 5, 1), None),
        (None, None),
    ],
)
def test_sql_literals(value, sql):
    assert sql_literal(value) == sql
    if sql is not None:  # and it reads back as the same value
        got = tree(f"c = {sql}")
        assert isinstance(got, t.Comparison)
        assert got.literal.value == (value.isoformat() if isinstance(value, dt.date) else value)


@pytest.mark.parametrize(
    "sql, calls",
    [
        ("t.id = s.id AND rand() > 0.5", ["rand"]),
        ("uuid() = s.key OR RANDN(1) > 0", ["randn", "uuid"]),
        ("t.day < current_date() - 7", []),  # fixed within a query, as Spark treats it
        ("t.id = s.id", []),
        ("not sql at all (", []),
    ],
)
def test_nondeterministic_calls(sql, calls):
    assert nondeterministic_calls(sql) == calls


def test_per_query_calls_only_when_asked():
    sql = "ts < current_timestamp() AND d = current_date() AND x < rand()"
    assert nondeterministic_calls(sql) == ["rand"]
    assert nondeterministic_calls(sql, per_query=True) == ["current_date", "current_timestamp", "rand"]
