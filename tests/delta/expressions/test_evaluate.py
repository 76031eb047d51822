"""Tests for delta/expressions/evaluate.py (three-valued logic over sets of
truth values, judged from facts about a column) and bind.py (a tree bound to
columns, its literals coerced)."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_delta_provider.delta.expressions.bind import bind
from airflow_delta_provider.delta.expressions.evaluate import (
    ANY,
    NONE,
    NOTHING_KNOWN,
    F,
    Facts,
    N,
    T,
    and3,
    comparison,
    evaluate,
    is_null,
    or3,
    spark_compare,
)
from airflow_delta_provider.delta.expressions.parse import Predicate
from airflow_delta_provider.delta.expressions.tree import (
    FALSE,
    NULL,
    TRUE,
    UNKNOWN,
    And,
    BoundComparison,
    BoundIsNull,
    Comparison,
    Literal,
    Not,
    Or,
)

UTC = dt.timezone.utc

# --- Truth values ----------------------------------------------------------------

_SQL = {T: True, F: False, N: None}


def _kleene_and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _kleene_or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def test_and_or_are_sql_three_valued_logic():
    for a, b in itertools.product((T, F, N), repeat=2):
        assert _SQL[and3(a, b)] is _kleene_and(_SQL[a], _SQL[b]), (a, b)
        assert _SQL[or3(a, b)] is _kleene_or(_SQL[a], _SQL[b]), (a, b)


def test_spark_order_puts_nan_above_every_number_and_equal_to_itself():
    nan = float("nan")
    assert spark_compare(nan, nan) == 0
    assert spark_compare(nan, math.inf) == 1
    assert spark_compare(-math.inf, nan) == -1
    assert spark_compare(1, 2) == -1 and spark_compare(2, 2) == 0 and spark_compare("b", "a") == 1


# --- One comparison against facts ------------------------------------------------

TEN_TO_TWENTY = Facts(10, 20, may_null=False, may_value=True)


@pytest.mark.parametrize(
    "op, value, expected",
    [
        ("=", 15, {T, F}),
        ("=", 9, {F}),
        ("=", 21, {F}),
        ("!=", 21, {T}),
        ("!=", 15, {T, F}),
        ("<", 10, {F}),
        ("<", 11, {T, F}),
        ("<=", 10, {T, F}),
        ("<=", 20, {T}),
        (">", 20, {F}),
        (">", 9, {T}),
        (">=", 20, {T, F}),
        (">=", 21, {F}),
        ("<=>", 30, {F}),
    ],
)
def test_comparison_against_bounds(op, value, expected):
    assert comparison(op, TEN_TO_TWENTY, value) == expected


def test_nulls_make_comparisons_null_but_null_safe_equality_false():
    with_nulls = Facts(10, 20, may_null=True, may_value=True)
    assert comparison("=", with_nulls, 30) == {F, N}
    assert comparison("<=>", with_nulls, 30) == {F}
    all_null = Facts.exact(None)
    assert comparison("=", all_null, 1) == {N}
    assert comparison("<=>", all_null, 1) == {F}
    assert is_null(all_null) == {T}
    assert is_null(TEN_TO_TWENTY) == {F}
    assert is_null(NOTHING_KNOWN) == {T, F}


def test_exact_facts_decide_every_comparison():
    five = Facts.exact(5)
    for op in ("=", "!=", "<", "<=", ">", ">=", "<=>"):
        for value in (4, 5, 6):
            assert len(comparison(op, five, value)) == 1, (op, value)
    assert comparison("!=", five, 5) == {F}


def test_no_rows_allow_no_truth_value():
    empty = Facts(None, None, may_null=False, may_value=False)
    assert comparison("=", empty, 1) == NONE
    assert is_null(empty) == NONE


def test_unbounded_and_incomparable_facts_allow_everything():
    assert comparison("=", NOTHING_KNOWN, 1) == ANY
    assert comparison("<", Facts(None, 5, False, True), 1) == {T, F}  # no lower bound
    assert comparison("=", Facts("a", "b", True, True), 1) == ANY  # a type mismatch


# --- Soundness: the facts of some rows allow every truth value those rows take ----

_OPS = {
    "=": lambda x, v: x == v,
    "!=": lambda x, v: x != v,
    "<": lambda x, v: x < v,
    "<=": lambda x, v: x <= v,
    ">": lambda x, v: x > v,
    ">=": lambda x, v: x >= v,
}


def _truth(op: str, x: Any, v: Any) -> str:
    if op == "<=>":
        return T if x == v else F
    if x is None:
        return N
    return T if _OPS[op](x, v) else F


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=6),
    st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<=>"]),
    st.integers(-6, 6),
    st.booleans(),
)
def test_facts_from_rows_allow_every_truth_value_the_rows_take(rows, op, value, widen):
    values = [r for r in rows if r is not None]
    lo, hi = (min(values), max(values)) if values else (None, None)
    if widen and values:  # looser bounds, as stats may be
        lo, hi = lo - 1, hi + 1
    facts = Facts(lo, hi, may_null=None in rows, may_value=bool(values))
    taken = {_truth(op, x, value) for x in rows}
    allowed = comparison(op, facts, value)
    assert taken <= allowed
    if not widen and len(set(rows)) == 1:  # one value in every row: the facts are exact
        assert allowed == taken


# --- Trees ----------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    name: str
    type: str


ID, NAME, TS = Col("id", "long"), Col("Name", "string"), Col("ts", "timestamp")
COLUMNS = {"id": ID, "name": NAME, "ts": TS}


def bound(sql: str, implied=None, tz: dt.tzinfo = UTC):
    return bind(Predicate.parse(sql).tree, COLUMNS, tz, implied)


def test_binding_resolves_names_case_insensitively_and_coerces_literals():
    assert bound("ID = 15") == BoundComparison(ID, "=", 15)
    assert bound("`name` IS NULL") == BoundIsNull(NAME)
    assert bound("ts > '2021-01-01 09:00:00'", tz=dt.timezone(dt.timedelta(hours=9))) == BoundComparison(
        TS, ">", dt.datetime(2021, 1, 1, tzinfo=UTC)
    )
    assert bound("NOT (id = 1 OR name < 'b')") == Not(Or(BoundComparison(ID, "=", 1), BoundComparison(NAME, "<", "b")))


def test_binding_leaves_unknown_what_it_cannot_resolve_or_coerce():
    assert bound("nosuch = 1") == UNKNOWN
    assert bound("nosuch IS NULL") == UNKNOWN
    assert bound("id = '1'") == UNKNOWN
    assert bound("id = 1 AND true") == And(BoundComparison(ID, "=", 1), TRUE)
    assert bind(Comparison("id", "=", Literal("int", 1)), {}, UTC) == UNKNOWN


def test_binding_ands_what_a_comparison_implies():
    seen = []

    def implied(column, op, value):
        seen.append((column, op, value))
        return [BoundComparison(NAME, "=", "x")] if column is ID else []

    assert bound("id > 3 OR name = 'y'", implied) == Or(
        And(BoundComparison(ID, ">", 3), BoundComparison(NAME, "=", "x")), BoundComparison(NAME, "=", "y")
    )
    assert seen == [(ID, ">", 3), (NAME, "=", "y")]


def test_evaluation_combines_sets_through_the_tree():
    facts = {ID: TEN_TO_TWENTY, NAME: Facts("a", "c", may_null=True, may_value=True)}.__getitem__
    assert evaluate(bound("id = 30"), facts) == {F}
    assert evaluate(bound("NOT (id = 30)"), facts) == {T}
    assert evaluate(bound("id = 30 OR name = 'b'"), facts) == {T, F, N}
    assert evaluate(bound("id = 30 AND name = 'b'"), facts) == {F}
    assert evaluate(bound("id > 5 AND name IS NOT NULL"), facts) == {T, F}
    assert evaluate(bound("id > 5 OR f(id) = 1"), facts) == {T}
    assert evaluate(bound("id = 15 AND f(id) = 1"), facts) == ANY
    assert evaluate(TRUE, facts) == {T} and evaluate(FALSE, facts) == {F} and evaluate(NULL, facts) == {N}
    assert evaluate(Not(NULL), facts) == {N}
    assert evaluate(Comparison("id", "=", Literal("int", 1)), facts) == ANY  # unbound: anything
