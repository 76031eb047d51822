"""Binding a typed tree to columns: names resolved, literals coerced.

A :class:`~.tree.Comparison` becomes a :class:`~.tree.BoundComparison`
holding the resolved column and the literal as a value of the column's type
(:func:`~.coerce.coerce_literal`); an ``IS NULL`` becomes a
:class:`~.tree.BoundIsNull`. A column the resolver does not know, or a
literal Spark's coercion does not certainly match, makes the leaf
:data:`~.tree.UNKNOWN`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from airflow_delta_provider.delta.expressions.coerce import NO_VALUE, coerce_literal
from airflow_delta_provider.delta.expressions.tree import (
    UNKNOWN,
    And,
    BoundComparison,
    BoundIsNull,
    Comparison,
    IsNull,
    Node,
    Not,
    Or,
)


class Typed(Protocol):
    """A column as binding needs it: its Delta type, lower case (``""`` for a nested type)."""

    @property
    def type(self) -> str: ...


C = TypeVar("C", bound=Typed)

#: What else a bound comparison implies: ``(column, op, value)`` to nodes that
#: are ANDed to it. Each must change no row's truth value (see :func:`bind`).
Implied = Callable[[Any, str, Any], Iterable[Node]]


def bind(node: Node, columns: Mapping[str, C], tz: dt.tzinfo, implied: Implied | None = None) -> Node:
    """``node`` with its leaves bound to ``columns`` (lower-case name -> column).

    ``tz`` is the session time zone, for timestamp literals without an
    offset. ``implied(column, op, value)`` may add facts a comparison implies
    on other columns (a partition column generated from the compared one);
    each is ANDed to the comparison, so it must hold whenever the comparison
    is true and be NULL or true otherwise: it may narrow what evaluation
    deems possible, never change a row's truth value.
    """
    if isinstance(node, Not):
        return Not(bind(node.child, columns, tz, implied))
    if isinstance(node, And):
        return And(bind(node.left, columns, tz, implied), bind(node.right, columns, tz, implied))
    if isinstance(node, Or):
        return Or(bind(node.left, columns, tz, implied), bind(node.right, columns, tz, implied))
    if isinstance(node, (Comparison, IsNull)):
        column = columns.get(node.column.lower())
        if column is None:
            return UNKNOWN
        if isinstance(node, IsNull):
            return BoundIsNull(column)
        value = coerce_literal(node.literal, column.type, tz)
        if value is NO_VALUE:
            return UNKNOWN
        bound: Node = BoundComparison(column, node.op, value)
        for extra in implied(column, node.op, value) if implied is not None else ():
            bound = And(bound, extra)
        return bound
    return node


__all__ = ["Implied", "Typed", "bind"]
