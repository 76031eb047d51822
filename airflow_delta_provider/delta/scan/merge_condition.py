"""What file skipping can learn from a MERGE's join condition.

MERGE reads only the target files that may hold a row matching the source,
as delta-spark's ``MergeIntoCommand`` and delta-rs's ``merge`` do. The join
condition (``t.id = s.id AND t.day = '2024-05-01'``) gives two kinds of facts:

- conjuncts that name only target columns (``t.day = '2024-05-01'``) are a
  filter on the target, which prunes files by partition values and stats as
  any condition does;
- equality conjuncts between a target column and a source column
  (``t.id = s.id``) bound the target column by the source's keys: a file
  whose ``id`` range misses ``[min(s.id), max(s.id)]`` cannot match.

The condition is read by the shared expression layer
(:mod:`airflow_delta_provider.delta.expressions.parse`), as file skipping
reads conditions. Columns are placed by their qualifier (the target or
source alias), or, unqualified, by which side has the column. Anything not
understood is left out of the facts, so a file is never pruned wrongly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.expressions.parse import (
    NONDETERMINISTIC,
    column_equality,
    column_references,
    conjuncts,
    has_subquery,
    nondeterministic_calls,
    parse_sql,
    sql_literal,
    unqualified_sql,
)
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

_TARGET, _SOURCE = "target", "source"


@dataclass(frozen=True)
class JoinFacts:
    """The parts of a join condition that bear on the target's files.

    ``target_filter``: the target-only conjuncts, as SQL over unqualified
    target column names (None when there are none). ``key_pairs``:
    ``(target column, source column)`` of each ``target = source`` equality.
    ``target_columns``: every target column the condition names.
    ``equi_join``: every conjunct is one of those two, so two source rows
    with equal keys match the same target rows.
    """

    target_filter: str | None
    key_pairs: tuple[tuple[str, str], ...]
    target_columns: tuple[str, ...]
    equi_join: bool = False


def join_facts(
    on: str,
    target_alias: str,
    source_alias: str,
    target_columns: Iterable[str],
    source_columns: Iterable[str],
) -> JoinFacts:
    """Split ``on`` into the facts above. A condition sqlglot cannot parse
    gives no facts (Spark, which checks it first, is the judge of validity)."""
    target_names = {c.lower(): c for c in target_columns}
    source_names = {c.lower(): c for c in source_columns}
    tree = parse_sql(on)
    if tree is None:
        return JoinFacts(None, (), (), False)

    def side(parts: tuple[str, ...]) -> tuple[str, str] | None:
        """(side, column name as the schema spells it) of a top-level column reference."""
        if len(parts) == 2:
            qualifier, name = parts[0].lower(), parts[1].lower()
            if qualifier == target_alias.lower() and name in target_names:
                return _TARGET, target_names[name]
            if qualifier == source_alias.lower() and name in source_names:
                return _SOURCE, source_names[name]
            return None
        if len(parts) == 1:
            name = parts[0].lower()
            if name in target_names and name not in source_names:
                return _TARGET, target_names[name]
            if name in source_names and name not in target_names:
                return _SOURCE, source_names[name]
        return None

    def target_name(parts: tuple[str, ...]) -> str:
        placed = side(parts)
        assert placed is not None  # every column of a target-only conjunct is placed
        return placed[1]

    filters: list[str] = []
    pairs: list[tuple[str, str]] = []
    named: dict[str, None] = {}
    understood = 0
    parts_of_tree = conjuncts(tree)
    for conjunct in parts_of_tree:
        sides = [side(parts) for parts in column_references(conjunct)]
        named.update({s[1]: None for s in sides if s is not None and s[0] == _TARGET})
        if None in sides or has_subquery(conjunct):
            continue
        placed = [s for s in sides if s is not None]
        if placed and all(s[0] == _TARGET for s in placed):
            filters.append(unqualified_sql(conjunct, target_name))
            understood += 1
            continue
        equality = column_equality(conjunct)
        if equality is not None and len(placed) == 2:
            a, b = side(equality[0]), side(equality[1])
            if a and b and {a[0], b[0]} == {_TARGET, _SOURCE}:
                pairs.append((a[1], b[1]) if a[0] == _TARGET else (b[1], a[1]))
                understood += 1
    target_filter = " AND ".join(f"({f})" for f in filters) if filters else None
    equi_join = bool(pairs) and understood == len(parts_of_tree)
    return JoinFacts(target_filter, tuple(pairs), tuple(named), equi_join)


def key_range_sql(column: str, low: Any, high: Any) -> str | None:
    """``column BETWEEN low AND high`` as SQL file skipping understands, for
    the key types whose bounds are exact (integers, decimals, strings,
    dates); None for other values (floats, timestamps), which give no range."""
    lo, hi = sql_literal(low), sql_literal(high)
    if lo is None or hi is None:
        return None
    name = quote_identifier(column)
    return f"{name} >= {lo} AND {name} <= {hi}"


__all__ = ["NONDETERMINISTIC", "JoinFacts", "join_facts", "key_range_sql", "nondeterministic_calls"]
