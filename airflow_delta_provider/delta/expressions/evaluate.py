"""Three-valued evaluation of a bound tree against facts about columns.

A node does not evaluate to one truth value but to the *set* of truth values
(TRUE, FALSE, NULL) it may take over the rows the facts allow. Facts about a
column are bounds of its non-null values and whether NULLs or values may be
present: from min/max/nullCount stats (bounds) or from a partition value
(exact, :meth:`Facts.exact`). A reader keeps a file when TRUE is possible,
and knows a condition is decided when the set has one member.

Values compare the way Spark compares them: NaN equals NaN and sorts above
every number. Values that cannot be compared (a type mismatch) allow every
truth value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.expressions.tree import (
    And,
    BoundComparison,
    BoundIsNull,
    Constant,
    Node,
    Not,
    Or,
)

T, F, N = "T", "F", "N"
#: A set of truth values: "T" (TRUE), "F" (FALSE), "N" (NULL).
Truths = frozenset[str]
ANY: Truths = frozenset((T, F, N))
NONE: Truths = frozenset()

_NOT = {T: F, F: T, N: N}


def and3(a: str, b: str) -> str:
    """SQL's AND of two truth values."""
    return F if F in (a, b) else N if N in (a, b) else T


def or3(a: str, b: str) -> str:
    """SQL's OR of two truth values."""
    return T if T in (a, b) else N if N in (a, b) else F


def _combine(op: Callable[[str, str], str], a: Truths, b: Truths) -> Truths:
    return frozenset(op(x, y) for x in a for y in b)


@dataclass(frozen=True)
class Facts:
    """What is known of one column over some rows: bounds of its non-null
    values (``lo``, ``hi``; None: unbounded), whether a NULL may be among
    them, and whether a non-null value may be."""

    lo: Any
    hi: Any
    may_null: bool
    may_value: bool

    @classmethod
    def exact(cls, value: Any) -> Facts:
        """Every row holds ``value`` (None: NULL), as a partition value says."""
        return cls(value, value, value is None, value is not None)


NOTHING_KNOWN = Facts(None, None, True, True)


def spark_compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as Spark orders ``a`` and ``b``: NaN equals NaN and sorts above every number."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    return (a > b) - (a < b)


def comparison(op: str, facts: Facts, value: Any) -> Truths:
    """The truth values ``x <op> value`` may take over the rows ``facts`` allow."""
    out = {N} if facts.may_null and op != "<=>" else set()
    if facts.may_value:
        lo, hi = facts.lo, facts.hi
        try:
            le_lo = lo is None or spark_compare(lo, value) <= 0  # some x <= value may exist
            lt_lo = lo is None or spark_compare(lo, value) < 0
            ge_hi = hi is None or spark_compare(hi, value) >= 0  # some x >= value may exist
            gt_hi = hi is None or spark_compare(hi, value) > 0
        except TypeError:
            return ANY
        eq_may = le_lo and ge_hi
        eq_sure = not lt_lo and not gt_hi  # lo == hi == value
        may_true, may_false = {
            "=": (eq_may, not eq_sure),
            "<=>": (eq_may, not eq_sure),
            "!=": (not eq_sure, eq_may),
            "<": (lt_lo, ge_hi),
            "<=": (le_lo, gt_hi),
            ">": (gt_hi, le_lo),
            ">=": (ge_hi, lt_lo),
        }[op]
        if may_true:
            out.add(T)
        if may_false:
            out.add(F)
    if op == "<=>" and facts.may_null:
        out.add(F)
    return frozenset(out)


def is_null(facts: Facts) -> Truths:
    """The truth values ``x IS NULL`` may take over the rows ``facts`` allow."""
    return frozenset(([T] if facts.may_null else []) + ([F] if facts.may_value else []))


def evaluate(node: Node, facts: Callable[[Any], Facts]) -> Truths:
    """The truth values bound ``node`` may take; ``facts(column)`` says what is
    known of a bound column. Unbound leaves and unknown parts allow every value."""
    if isinstance(node, BoundComparison):
        return comparison(node.op, facts(node.column), node.value)
    if isinstance(node, BoundIsNull):
        return is_null(facts(node.column))
    if isinstance(node, And):
        return _combine(and3, evaluate(node.left, facts), evaluate(node.right, facts))
    if isinstance(node, Or):
        return _combine(or3, evaluate(node.left, facts), evaluate(node.right, facts))
    if isinstance(node, Not):
        return frozenset(_NOT[x] for x in evaluate(node.child, facts))
    if isinstance(node, Constant):
        return frozenset((N if node.value is None else T if node.value else F,))
    return ANY


__all__ = [
    "ANY",
    "NONE",
    "NOTHING_KNOWN",
    "F",
    "Facts",
    "N",
    "T",
    "Truths",
    "and3",
    "comparison",
    "evaluate",
    "is_null",
    "or3",
    "spark_compare",
]
