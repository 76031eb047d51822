"""The typed tree a SQL condition is lowered to.

A predicate is a tree of leaves (a column compared with a literal, a column
``IS NULL``, a constant) joined by ``NOT``, ``AND`` and ``OR``. What a reader
does not understand (functions, arithmetic, ``LIKE``, a column against a
column, a nested field) is :data:`UNKNOWN`: it may be true, false or NULL.
After :func:`~airflow_delta_provider.delta.expressions.bind.bind`, leaves refer
to resolved columns and hold values of the column's type.

Terms (:class:`Column`, :class:`Call`) are the expressions a generated
column's definition may be: a column, or a recognised function of one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

#: The comparison operators, as Spark spells them (``<>`` is ``!=``).
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
#: ``a <op> b`` is ``b <FLIPPED[op]> a``.
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}

#: The kinds a literal may have: as Spark types it. ``date``, ``timestamp``
#: and ``timestamp_ntz`` literals hold their text, read by the coercion.
LITERAL_KINDS = ("null", "int", "decimal", "double", "float", "string", "bool", "date", "timestamp", "timestamp_ntz")
NUMERIC_KINDS = ("int", "decimal", "double", "float")


@dataclass(frozen=True)
class Literal:
    """A literal as Spark types it; ``kind`` is one of :data:`LITERAL_KINDS`."""

    kind: str
    value: Any


NULL_LITERAL = Literal("null", None)


# --- Terms -------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A plain top-level column reference, spelled as written."""

    name: str


@dataclass(frozen=True)
class Call:
    """A recognised function of one column: ``date`` (``CAST(c AS DATE)``,
    ``to_date(c)``), ``year``, ``month``, ``day`` or ``hour``."""

    function: str
    argument: Column


Term = Column | Call

#: The functions :class:`Call` may name.
FUNCTIONS = ("date", "year", "month", "day", "hour")


# --- Predicates --------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """``column <op> literal``, the column on the left; ``op`` one of :data:`OPERATORS`."""

    column: str
    op: str
    literal: Literal


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL`` (and ``column <=> NULL``)."""

    column: str


@dataclass(frozen=True)
class Not:
    """``NOT child``: TRUE and FALSE swap, NULL stays NULL."""

    child: Node


@dataclass(frozen=True)
class _Junction:
    left: Node
    right: Node


class And(_Junction):
    """``left AND right``."""


class Or(_Junction):
    """``left OR right``."""


@dataclass(frozen=True)
class Constant:
    """``TRUE``, ``FALSE`` or ``NULL`` (``value`` None)."""

    value: bool | None


@dataclass(frozen=True)
class Unknown:
    """A part no reader understands: it may be true, false or NULL."""


@dataclass(frozen=True)
class BoundComparison:
    """A :class:`Comparison` bound: ``column`` resolved, ``value`` the literal coerced to its type."""

    column: Any
    op: str
    value: Any


@dataclass(frozen=True)
class BoundIsNull:
    """An :class:`IsNull` bound: ``column`` resolved."""

    column: Any


Node = Comparison | IsNull | Not | And | Or | Constant | Unknown | BoundComparison | BoundIsNull

UNKNOWN = Unknown()
TRUE = Constant(True)
FALSE = Constant(False)
NULL = Constant(None)


def any_of(leaves: Sequence[Node]) -> Node:
    """OR of ``leaves`` (at least one) as a balanced tree, so long IN lists stay shallow."""
    if len(leaves) == 1:
        return leaves[0]
    mid = len(leaves) // 2
    return Or(any_of(leaves[:mid]), any_of(leaves[mid:]))


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, depth first."""
    yield node
    if isinstance(node, Not):
        yield from walk(node.child)
    elif isinstance(node, (And, Or)):
        yield from walk(node.left)
        yield from walk(node.right)


__all__ = [
    "FALSE",
    "FLIPPED",
    "FUNCTIONS",
    "LITERAL_KINDS",
    "NULL",
    "NULL_LITERAL",
    "NUMERIC_KINDS",
    "OPERATORS",
    "TRUE",
    "UNKNOWN",
    "And",
    "BoundComparison",
    "BoundIsNull",
    "Call",
    "Column",
    "Comparison",
    "Constant",
    "IsNull",
    "Literal",
    "Node",
    "Not",
    "Or",
    "Term",
    "Unknown",
    "any_of",
    "walk",
]
