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

The condition is parsed with sqlglot (Spark dialect), as file skipping
parses conditions. Columns are placed by their qualifier (the target or
source alias), or, unqualified, by which side has the column. Anything not
understood is left out of the facts, so a file is never pruned wrongly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from airflow_delta_provider.delta.errors import InvalidInputError

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
    try:
        tree = sqlglot.parse_one(on, read="spark")
    except SqlglotError:
        return JoinFacts(None, (), (), False)

    def side(column: exp.Column) -> tuple[str, str] | None:
        """(side, column name as the schema spells it) of a top-level column reference."""
        parts = [p.name for p in column.parts]
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

    filters: list[str] = []
    pairs: list[tuple[str, str]] = []
    named: dict[str, None] = {}
    understood = 0
    conjuncts = _conjuncts(tree)
    for conjunct in conjuncts:
        columns = list(conjunct.find_all(exp.Column))
        sides = [side(c) for c in columns]
        named.update({s[1]: None for s in sides if s is not None and s[0] == _TARGET})
        if None in sides or conjunct.find(exp.Query) is not None:
            continue
        if columns and all(s[0] == _TARGET for s in sides):  # type: ignore[index]
            bare = conjunct.copy()
            for c in list(bare.find_all(exp.Column)):
                c.replace(exp.column(side(c)[1], quoted=True))  # type: ignore[index]
            filters.append(bare.sql(dialect="spark"))
            understood += 1
        elif isinstance(conjunct, exp.EQ) and len(columns) == 2:
            left, right = conjunct.this, conjunct.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                a, b = side(left), side(right)
                if a and b and {a[0], b[0]} == {_TARGET, _SOURCE}:
                    pairs.append((a[1], b[1]) if a[0] == _TARGET else (b[1], a[1]))
                    understood += 1
    target_filter = " AND ".join(f"({f})" for f in filters) if filters else None
    equi_join = bool(pairs) and understood == len(conjuncts)
    return JoinFacts(target_filter, tuple(pairs), tuple(named), equi_join)


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [*_conjuncts(node.this), *_conjuncts(node.expression)]
    return [node]


def key_range_sql(column: str, low: Any, high: Any) -> str | None:
    """``column BETWEEN low AND high`` as SQL file skipping understands, for
    the key types whose bounds are exact (integers, decimals, strings,
    dates); None for other values (floats, timestamps), which give no range."""
    lo, hi = _literal(low), _literal(high)
    if lo is None or hi is None:
        return None
    name = exp.column(column, quoted=True).sql(dialect="spark")
    return f"{name} >= {lo} AND {name} <= {hi}"


def _literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        return exp.Literal.string(value).sql(dialect="spark")
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"CAST('{value.isoformat()}' AS DATE)"
    return None


#: Spark functions whose value changes from one evaluation to the next.
NONDETERMINISTIC = frozenset(
    {
        "rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id",
        "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length",
        "randstr", "uniform", "try_reflect", "reflect", "java_method",
    }
)  # fmt: skip


#: Functions Spark fixes once per query: two queries of one command may see
#: two values (the change data feed writes data and change rows in two).
PER_QUERY = frozenset(
    {"current_timestamp", "now", "current_date", "curdate", "localtimestamp", "unix_timestamp", "current_timezone"}
)


def nondeterministic_calls(sql: str, *, per_query: bool = False) -> list[str]:
    """The functions in ``sql`` whose value may change between evaluations
    (:data:`NONDETERMINISTIC`, and :data:`PER_QUERY` with ``per_query``),
    sorted; empty when sqlglot cannot parse it."""
    wanted = NONDETERMINISTIC | PER_QUERY if per_query else NONDETERMINISTIC
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError:
        return []
    names = set()
    for node in tree.find_all(exp.Func):
        name = node.sql_name().lower() if not isinstance(node, exp.Anonymous) else str(node.this).lower()
        if name in wanted:
            names.add(name)
    return sorted(names)


def check_alias(alias: str, what: str) -> str:
    """An alias must be a plain SQL identifier (it is spliced into column references)."""
    if not alias or not alias.isascii() or not alias.replace("_", "a").isalnum() or alias[0].isdigit():
        raise InvalidInputError(f"the {what} alias {alias!r} must be a plain identifier (letters, digits, _)")
    return alias


__all__ = ["NONDETERMINISTIC", "JoinFacts", "check_alias", "join_facts", "key_range_sql", "nondeterministic_calls"]
