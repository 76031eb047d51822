"""Resolving the columns user SQL names against a table's schema, with no Spark.

A mistyped column should fail in the task's own process, in a second, not
after a JVM has started. :func:`check_columns` reads user SQL (a condition,
a SET expression, ``replace_where``, MERGE's ``on``) through
:func:`~.parse.parse_user_sql` and refuses a reference to a column the table
lacks, with Spark's own message (``UNRESOLVED_COLUMN.WITH_SUGGESTION``: the
five nearest columns by edit distance, as Spark orders them).

It only refuses what Spark would refuse too; everything it cannot decide is
left to Spark's analysis, the final word:

- names match case-insensitively (Spark's default), logical names (column
  mapping's display names), quoted or not;
- a nested field (``s.a``) needs only its top-level column;
- Spark's functions written without parentheses (``current_date``), the
  hidden ``_metadata`` column and lambda parameters are not columns;
- SQL sqlglot cannot read is not judged at all;
- with a ``qualifier`` (MERGE's target alias) only references through it are
  checked: an unqualified name may be the source's, which only the source knows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError, UnresolvedColumnError
from airflow_delta_provider.delta.expressions.parse import column_paths, parse_user_sql
from airflow_delta_provider.delta.expressions.quoting import quote_identifier, split_identifier, unquote_identifier

#: How many columns Spark's message proposes.
SUGGESTIONS = 5
#: Spark functions called without parentheses (``current_date``), when not backtick-quoted.
PARENLESS_FUNCTIONS = frozenset(
    {
        "current_date", "current_timestamp", "current_time", "current_user", "user", "session_user",
        "current_timezone", "current_schema", "current_database", "current_catalog", "localtimestamp",
        "localtime", "grouping__id",
    }
)  # fmt: skip
#: Columns every file source has without the schema naming them.
HIDDEN_COLUMNS = frozenset({"_metadata"})


def check_columns(sql: str, what: str, schema: Mapping[str, Any], qualifier: str | None = None) -> None:
    """Refuse ``sql`` (user SQL ``what``) when it does not parse or names a
    column ``schema`` (Delta schema JSON) lacks; see the module docs for what
    is left to Spark. ``qualifier``: check only the references through it
    (``t.id`` for MERGE's target alias ``t``).

    Raises :class:`~airflow_delta_provider.delta.errors.SqlSyntaxError` or
    :class:`~airflow_delta_provider.delta.errors.UnresolvedColumnError`.
    """
    tree = parse_user_sql(sql, what)
    if tree is None:
        return
    names = [f["name"] for f in schema.get("fields", ())]
    known = {name.lower() for name in names} | HIDDEN_COLUMNS
    for parts, quoted in column_paths(tree):
        if qualifier is None:
            missing = _unqualified_miss(parts, quoted, known)
            candidates = [quote_identifier(name) for name in names]
        else:
            missing = _qualified_miss(parts, qualifier, known)
            candidates = [f"{quote_identifier(qualifier)}.{quote_identifier(name)}" for name in names]
        if missing is not None:
            raise unresolved_column(missing, candidates, f"invalid {what} {sql!r}: ")


def _unqualified_miss(parts: tuple[str, ...], quoted: bool, known: set[str]) -> tuple[str, ...] | None:
    root = parts[0].lower()
    if root in known or ".".join(parts).lower() in known:
        return None
    if len(parts) == 1 and not quoted and root in PARENLESS_FUNCTIONS:
        return None
    return parts


def _qualified_miss(parts: tuple[str, ...], qualifier: str, known: set[str]) -> tuple[str, ...] | None:
    if len(parts) < 2 or parts[0].lower() != qualifier.lower() or parts[0].lower() in known:
        return None  # unqualified, another alias's, or a struct column named like the alias
    return None if parts[1].lower() in known else parts[:2]


def unresolved_column(parts: Sequence[str], candidates: Sequence[str], prefix: str = "") -> UnresolvedColumnError:
    """Spark's error for the column ``parts`` that does not resolve among
    ``candidates`` (quoted names), ``prefix`` before it."""
    name = ".".join(quote_identifier(p) for p in parts)
    if not candidates:
        return UnresolvedColumnError(
            f"{prefix}[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] A column, variable, or function parameter "
            f"with name {name} cannot be resolved."
        )
    nearest = ", ".join(suggestions(name if len(parts) > 1 else parts[-1], candidates, len(parts) > 1))
    return UnresolvedColumnError(
        f"{prefix}[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name "
        f"{name} cannot be resolved. Did you mean one of the following? [{nearest}]."
    )


def suggestions(base: str, candidates: Iterable[str], qualified: bool = False) -> list[str]:
    """The :data:`SUGGESTIONS` ``candidates`` nearest ``base``, as Spark orders
    them (``StringUtils.orderSuggestedIdentifiersBySimilarity``): by edit
    distance to the whole candidate for a qualified ``base``, else to the
    candidate's last part; ties by name (Spark lists a plan's columns sorted by name)."""

    def distance(candidate: str) -> tuple[int, str]:
        name = split_identifier(candidate)[-1]  # a quoted name, or the last part of a qualified one
        return levenshtein(candidate if qualified else name, base), name

    return sorted(candidates, key=distance)[:SUGGESTIONS]


def levenshtein(a: str, b: str) -> int:
    """The edit distance of ``a`` and ``b`` (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def set_targets(schema: Mapping[str, Any], targets: Iterable[str]) -> list[dict[str, Any]]:
    """The top-level fields UPDATE's SET ``targets`` name, in order: case-insensitive,
    bare or backtick-quoted (```Super Name```, as in SQL's ``SET``), each once."""
    fields = list(schema.get("fields", ()))
    by_name = {f["name"].lower(): f for f in fields}
    out: list[dict[str, Any]] = []
    for target in targets:
        field = by_name.get(unquote_identifier(target).lower())
        if field is None:
            candidates = [quote_identifier(f["name"]) for f in fields]
            raise unresolved_column([unquote_identifier(target)], candidates, f"cannot SET unknown column {target!r}: ")
        if any(f["name"] == field["name"] for f in out):
            raise InvalidInputError(f"column {field['name']!r} is SET more than once")
        out.append(field)
    return out


__all__ = [
    "HIDDEN_COLUMNS",
    "PARENLESS_FUNCTIONS",
    "SUGGESTIONS",
    "check_columns",
    "levenshtein",
    "set_targets",
    "suggestions",
    "unresolved_column",
]
