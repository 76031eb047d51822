"""Column lineage of the changes whose column flow is clear.

An UPDATE ``SET c = expr WHERE cond`` writes ``CASE WHEN cond THEN expr ELSE
c END`` into ``c`` and copies every other column: so ``c`` comes from the
columns of ``expr`` (DIRECT), from itself (the rows that do not match keep
it) and, INDIRECT, from the columns of ``cond``. A DELETE copies every column
of the rows it keeps, and its condition filters the whole table. A REORG
rewrites rows unchanged. The edge types are OpenLineage's (``DIRECT`` /
``INDIRECT`` with subtypes ``IDENTITY``, ``TRANSFORMATION``, ``CONDITIONAL``,
``FILTER``).

Expressions are Spark SQL, parsed with sqlglot as the core does for
conditions. An expression sqlglot cannot read leaves its output column out:
lineage that may be wrong is worse than none.

Nothing here imports OpenLineage: :mod:`.facets` turns the result into facets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DIRECT = "DIRECT"
INDIRECT = "INDIRECT"
IDENTITY = "IDENTITY"
TRANSFORMATION = "TRANSFORMATION"
CONDITIONAL = "CONDITIONAL"
FILTER = "FILTER"


@dataclass(frozen=True)
class Edge:
    """Input column ``column`` feeds an output column, or every column, this way."""

    column: str
    type: str
    subtype: str


@dataclass(frozen=True)
class ColumnLineage:
    """Output column -> the edges into it; ``dataset``: edges into every column."""

    fields: dict[str, tuple[Edge, ...]]
    dataset: tuple[Edge, ...] = ()


@dataclass(frozen=True)
class Rewrite:
    """How an UPDATE, DELETE or REORG derives the rows it writes from the rows it read.

    :param assignments: UPDATE's ``{column: SQL expression}``.
    :param condition: The SQL condition; None for every row.
    :param deletes: The condition picks rows to drop (DELETE), not rows to change.
    """

    assignments: Mapping[str, str] = field(default_factory=dict)
    condition: str | None = None
    deletes: bool = False


def identity_lineage(columns: Iterable[str]) -> ColumnLineage:
    """Every column copied from the input column of the same name."""
    return ColumnLineage({c: (Edge(c, DIRECT, IDENTITY),) for c in columns})


def rewrite_lineage(schema: Mapping[str, Any], rewrite: Rewrite) -> ColumnLineage:
    """The column lineage of ``rewrite`` on a table of ``schema`` (Delta schema JSON)."""
    from airflow_delta_provider.delta.schema.fields import column_names

    columns = column_names(schema)
    condition = [] if rewrite.condition is None else referenced_columns(rewrite.condition, columns)
    if rewrite.deletes:
        filters = tuple(Edge(c, INDIRECT, FILTER) for c in condition or ())
        return ColumnLineage(identity_lineage(columns).fields, filters)
    assigned = {target.strip().lower(): sql for target, sql in rewrite.assignments.items()}
    fields: dict[str, tuple[Edge, ...]] = {}
    for column in columns:
        sql = assigned.get(column.lower())
        if sql is None:
            fields[column] = (Edge(column, DIRECT, IDENTITY),)
            continue
        edges = _assignment_edges(sql, columns)
        if edges is None or condition is None:
            continue  # unreadable: no lineage rather than a wrong one
        if rewrite.condition is not None:
            edges += [Edge(column, DIRECT, IDENTITY), *(Edge(c, INDIRECT, CONDITIONAL) for c in condition)]
        fields[column] = tuple(dict.fromkeys(edges))
    return ColumnLineage(fields)


def _assignment_edges(sql: str, columns: list[str]) -> list[Edge] | None:
    """DIRECT edges from the columns of ``sql``: IDENTITY for a bare column."""
    from sqlglot import exp

    tree = _parse(sql)
    if tree is None:
        return None
    refs = _columns_of(tree, columns)
    subtype = IDENTITY if isinstance(tree.unnest(), exp.Column) else TRANSFORMATION
    return [Edge(c, DIRECT, subtype) for c in refs]


def referenced_columns(sql: str, columns: Iterable[str]) -> list[str] | None:
    """The top-level ``columns`` that ``sql`` reads (a struct field reads its
    column), in the table's spelling; None when sqlglot cannot parse ``sql``."""
    tree = _parse(sql)
    return None if tree is None else _columns_of(tree, list(columns))


def _parse(sql: str) -> Any:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        return sqlglot.parse_one(sql, read="spark")
    except SqlglotError:
        return None


def _columns_of(tree: Any, columns: list[str]) -> list[str]:
    from sqlglot import exp

    by_lower = {c.lower(): c for c in columns}
    found = (by_lower.get(node.parts[0].name.lower()) for node in tree.find_all(exp.Column))
    return sorted({c for c in found if c}, key=columns.index)  # in the table's column order
