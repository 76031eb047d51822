"""Spark SQL text to the typed tree, through sqlglot (Spark dialect).

This is the one module of the core that reads SQL. It gives:

- :class:`Predicate`: a boolean condition, checked (no statement, no
  subquery), with the columns it names and its typed tree
  (:func:`lower`);
- :func:`term`: a generation expression as a column or a recognised
  function of one column;
- the helpers every reader of SQL shares: :func:`parse_sql` (lenient),
  :func:`referenced_columns`, :func:`conjuncts`, :func:`column_references`,
  :func:`column_equality`, :func:`unqualified_sql`,
  :func:`sql_literal`, and :func:`nondeterministic_calls`.

Lowering never fails: what it does not understand becomes
:data:`~airflow_delta_provider.delta.expressions.tree.UNKNOWN`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from airflow_delta_provider.delta.errors import InvalidInputError, SqlSyntaxError
from airflow_delta_provider.delta.expressions.coerce import cast_literal, number
from airflow_delta_provider.delta.expressions.tree import (
    FALSE,
    FLIPPED,
    NULL,
    NULL_LITERAL,
    NUMERIC_KINDS,
    TRUE,
    UNKNOWN,
    And,
    Call,
    Column,
    Comparison,
    IsNull,
    Literal,
    Node,
    Not,
    Or,
    Term,
    any_of,
)

#: A parsed sqlglot tree. Callers hold it opaquely and hand it back to this module.
#: (sqlglot 30 renamed its base class ``Expression`` to ``Expr``.)
if TYPE_CHECKING:
    Expression = exp.Expr
else:
    Expression = getattr(exp, "Expr", exp.Expression)

_DIALECT = "spark"

# --- Parsing -----------------------------------------------------------------------


def parse_sql(sql: str) -> Expression | None:
    """The sqlglot tree of ``sql``, or None when sqlglot cannot parse it
    (callers then assume the worst: it may read any column, do anything)."""
    try:
        return sqlglot.parse_one(sql, read=_DIALECT)
    except SqlglotError:
        return None


def parse_condition(sql: str) -> Expression:
    """The tree of a boolean condition; InvalidInputError for empty text, bad
    syntax, a statement that is not a condition, or a subquery."""
    if not sql or not sql.strip():
        raise InvalidInputError("the condition is empty")
    try:
        tree = sqlglot.parse_one(sql, read=_DIALECT)
    except SqlglotError as e:
        raise InvalidInputError(f"cannot parse condition {sql!r}: {e}") from e
    if not isinstance(tree, exp.Condition):
        raise InvalidInputError(f"condition {sql!r} is not a boolean expression")
    if tree.find(exp.Query) is not None:
        raise InvalidInputError(f"condition {sql!r} holds a subquery, which is not supported")
    return tree


#: sqlglot's parse errors that are syntax errors for Spark too: an operator
#: without its operand (``a AND AND b``, ``a =``), a parenthesis never closed.
#: Any other failure may be Spark syntax sqlglot does not know (``s:a``), which
#: Spark's parser judges.
_CERTAIN_SYNTAX_ERRORS = ("Required keyword:", "Expecting )")


def parse_user_sql(sql: str, what: str) -> Expression | None:
    """The tree of user SQL ``what`` (``"condition"``, ``"SET expression for c"``), checked
    before any Spark runs; None when sqlglot cannot read it but Spark might.

    :class:`~airflow_delta_provider.delta.errors.SqlSyntaxError` for empty
    text, a statement, and the syntax errors both parsers refuse
    (:data:`_CERTAIN_SYNTAX_ERRORS`). Its message is Spark's
    ``PARSE_SYNTAX_ERROR``, with the token at fault and its position: sqlglot
    finds the token itself, where Spark may point at a later one.
    """
    if not sql.strip():
        raise SqlSyntaxError(f"{what} is empty")
    try:
        tree = sqlglot.parse_one(sql, read=_DIALECT)
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        if not str(first.get("description", "")).startswith(_CERTAIN_SYNTAX_ERRORS):
            return None
        raise SqlSyntaxError(f"invalid {what} {sql!r}: {_syntax_error(sql, first)}") from None
    except SqlglotError:
        return None
    if isinstance(tree, (exp.Query, exp.Block, exp.Command)):
        raise SqlSyntaxError(f"invalid {what} {sql!r}: a statement, not an expression")
    return tree


def _syntax_error(sql: str, error: Mapping[str, Any]) -> str:
    """Spark's ``PARSE_SYNTAX_ERROR`` line for sqlglot's ``error``: the token and its
    0-based position on its line (``end of input`` when nothing follows it)."""
    line = int(error.get("line") or 1)
    text = sql.splitlines()[line - 1] if sql.splitlines() else sql
    if not str(error.get("end_context", "")).strip():  # the input ended too soon
        near, pos = "end of input", len(text)
    else:
        highlight = str(error.get("highlight", ""))
        near, pos = f"'{highlight}'", int(error.get("col") or 0) - len(highlight)
    return f"[PARSE_SYNTAX_ERROR] Syntax error at or near {near} (line {line}, pos {pos})"


# --- Columns -----------------------------------------------------------------------


def _unwrap(node: Expression) -> Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def column_name(node: Expression) -> str | None:
    """The name of a plain top-level column reference (in parentheses or not), else None."""
    node = _unwrap(node)
    if isinstance(node, exp.Column) and len(node.parts) == 1:
        return node.name
    return None


def column_references(node: Expression) -> list[tuple[str, ...]]:
    """The parts of every column reference in ``node``, as written, in order
    (``t.id`` is ``("t", "id")``; for a nested field ``s.a`` the first part is the column)."""
    return [tuple(p.name for p in c.parts) for c in node.find_all(exp.Column)]


def column_paths(node: Expression) -> list[tuple[tuple[str, ...], bool]]:
    """Every column reference in ``node``: its parts as written, and whether its
    first part was backtick-quoted (```current_date``` is a column,
    ``current_date`` a function). A lambda's parameters are not columns."""
    return [(tuple(p.name for p in c.parts), bool(c.parts[0].args.get("quoted"))) for c in node.find_all(exp.Column)]


def column_roots(node: Expression) -> list[str]:
    """The top-level column each column reference in ``node`` reads (for ``s.x``: ``s``), as written."""
    return [c.parts[0].name for c in node.find_all(exp.Column)]


def referenced_columns(sql: str) -> set[str] | None:
    """The top-level column names ``sql`` reads (for ``s.x``: ``s``), lower
    case; None when sqlglot cannot parse it (callers then assume it may read
    any column)."""
    tree = parse_sql(sql)
    return None if tree is None else {name.lower() for name in column_roots(tree)}


def columns_missing(sql: str, schema: Mapping[str, Any]) -> list[str]:
    """The top-level columns ``sql`` reads that ``schema`` (Delta schema
    JSON) lacks, sorted; a schema change must not leave an expression of
    the table (a CHECK constraint, a generation expression) reading one."""
    have = {f["name"].lower() for f in schema.get("fields", ())}
    return sorted((referenced_columns(sql) or set()) - have)


def has_subquery(node: Expression) -> bool:
    return node.find(exp.Query) is not None


def conjuncts(node: Expression) -> list[Expression]:
    """The operands of the top-level ``AND``\\ s of ``node`` (parentheses looked through)."""
    node = _unwrap(node)
    if isinstance(node, exp.And):
        return [*conjuncts(node.this), *conjuncts(node.expression)]
    return [node]


def column_equality(node: Expression) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The parts of ``a`` and ``b`` when ``node`` is exactly ``a = b`` of two
    column references (not ``<=>``, not inside parentheses); else None."""
    if isinstance(node, exp.EQ) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column):
        return tuple(p.name for p in node.this.parts), tuple(p.name for p in node.expression.parts)
    return None


def unqualified_sql(node: Expression, rename: Callable[[tuple[str, ...]], str]) -> str:
    """The Spark SQL of ``node`` with each column reference replaced by the
    quoted single name ``rename(parts)`` gives it. ``node`` is not changed."""
    bare = node.copy()
    for c in list(bare.find_all(exp.Column)):
        c.replace(exp.column(rename(tuple(p.name for p in c.parts)), quoted=True))
    return bare.sql(dialect=_DIALECT)


def sql_literal(value: Any) -> str | None:
    """``value`` as a Spark SQL literal whose type is exact: integers, decimals,
    strings and dates; None for anything else (floats, timestamps, booleans)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        return exp.Literal.string(value).sql(dialect=_DIALECT)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"CAST('{value.isoformat()}' AS DATE)"
    return None


# --- Non-determinism ---------------------------------------------------------------

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


def function_names(node: Expression) -> set[str]:
    """The lower-case names of the functions ``node`` calls (as Spark names them)."""
    names = set()
    for call in node.find_all(exp.Func):
        names.add(str(call.this).lower() if isinstance(call, exp.Anonymous) else call.sql_name().lower())
    return names


def nondeterministic_calls(sql: str, *, per_query: bool = False) -> list[str]:
    """The functions in ``sql`` whose value may change between evaluations
    (:data:`NONDETERMINISTIC`, and :data:`PER_QUERY` with ``per_query``),
    sorted; empty when sqlglot cannot parse it."""
    tree = parse_sql(sql)
    if tree is None:
        return []
    wanted = NONDETERMINISTIC | PER_QUERY if per_query else NONDETERMINISTIC
    return sorted(function_names(tree) & wanted)


# --- Literals ----------------------------------------------------------------------

_CAST_KINDS = {
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIMESTAMP: "timestamp",
    exp.DataType.Type.TIMESTAMPTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPLTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPNTZ: "timestamp_ntz",
    exp.DataType.Type.TINYINT: "int",
    exp.DataType.Type.SMALLINT: "int",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.BIGINT: "int",
    exp.DataType.Type.DOUBLE: "double",
    exp.DataType.Type.FLOAT: "float",
    exp.DataType.Type.DECIMAL: "decimal",
    exp.DataType.Type.VARCHAR: "string",
    exp.DataType.Type.TEXT: "string",
    exp.DataType.Type.BOOLEAN: "bool",
}


def literal(node: Expression) -> Literal | None:
    """The literal ``node`` denotes (:data:`~.tree.NULL_LITERAL` for NULL;
    ``-x`` and ``CAST`` of a literal folded), None when ``node`` is not a
    literal understood here."""
    try:
        return _literal(node)
    except (ValueError, InvalidOperation, OverflowError):
        return None


def _literal(node: Expression) -> Literal | None:
    node = _unwrap(node)
    if isinstance(node, exp.Null):
        return NULL_LITERAL
    if isinstance(node, exp.Boolean):
        return Literal("bool", bool(node.this))
    if isinstance(node, exp.Literal):
        return Literal("string", node.this) if node.is_string else number(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if inner is not None and inner.kind in NUMERIC_KINDS:
            return Literal(inner.kind, -inner.value)
        return None
    if isinstance(node, (exp.Cast, exp.TryCast)):
        inner = _literal(node.this)
        kind = _CAST_KINDS.get(node.to.this)
        if inner is None or kind is None:
            return None
        if inner.kind == "null":
            return inner
        return cast_literal(inner, kind)
    return None


# --- Predicates --------------------------------------------------------------------

_OPS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}


def lower(node: Expression) -> Node:
    """The typed tree of a sqlglot condition."""
    node = _unwrap(node)
    if isinstance(node, exp.And):
        return And(lower(node.this), lower(node.expression))
    if isinstance(node, exp.Or):
        return Or(lower(node.this), lower(node.expression))
    if isinstance(node, exp.Not):
        return Not(lower(node.this))
    if type(node) in _OPS:
        return _comparison(_OPS[type(node)], node.this, node.expression)
    if isinstance(node, exp.Is):
        col = column_name(node.this)
        if col is not None and isinstance(node.expression, exp.Null):
            return IsNull(col)
        return UNKNOWN
    if isinstance(node, exp.In):
        if any(node.args.get(k) for k in ("query", "unnest", "field")) or not node.expressions:
            return UNKNOWN
        return any_of([_comparison("=", node.this, item) for item in node.expressions])
    if isinstance(node, exp.Between):
        return And(_comparison(">=", node.this, node.args["low"]), _comparison("<=", node.this, node.args["high"]))
    col = column_name(node)
    if col is not None:  # a bare (boolean) column
        return Comparison(col, "=", Literal("bool", True))
    lit = literal(node)
    if lit is not None:
        if lit.kind == "null":
            return NULL
        if lit.kind == "bool":
            return TRUE if lit.value else FALSE
    return UNKNOWN


def _comparison(op: str, left: Expression, right: Expression) -> Node:
    col, lit = column_name(left), literal(right)
    if col is None or lit is None:
        col, lit, op = column_name(right), literal(left), FLIPPED[op]
    if col is None or lit is None:
        return UNKNOWN
    if lit.kind == "null":
        return IsNull(col) if op == "<=>" else NULL
    return Comparison(col, op, lit)


@dataclass(frozen=True)
class Predicate:
    """A parsed SQL condition.

    ``sql`` is the text as given; ``expression`` the sqlglot tree (the Spark
    layer may reuse it); :attr:`tree` the typed tree readers evaluate.
    """

    sql: str
    expression: Expression

    @classmethod
    def parse(cls, sql: str) -> Predicate:
        """Parse a Spark SQL boolean condition; bad syntax is an InvalidInputError."""
        return cls(sql=sql, expression=parse_condition(sql))

    @property
    def columns(self) -> frozenset[str]:
        """Top-level column names referenced, spelled as written."""
        return frozenset(column_roots(self.expression))

    def is_partition_only(self, partition_columns: Iterable[str]) -> bool:
        """True when every referenced column is a partition column (case-insensitive).

        This is delta-spark's split of a condition into partition and data
        filters. Whether partition values *decide* the condition exactly is a
        further question, which evaluation answers.
        """
        parts = {c.lower() for c in partition_columns}
        return all(c.lower() in parts for c in self.columns)

    @property
    def tree(self) -> Node:
        """The typed tree (lowered once, on first use)."""
        got = self.__dict__.get("_lowered")
        if got is None:
            got = lower(self.expression)
            object.__setattr__(self, "_lowered", got)
        return got

    def __str__(self) -> str:
        return self.sql


# --- Terms -------------------------------------------------------------------------


def term(sql: str) -> Term | None:
    """A generation expression as a :class:`~.tree.Column` or a
    :class:`~.tree.Call` of a recognised function of one column
    (``CAST(c AS DATE)``, ``to_date(c)``, ``year``, ``month``, ``day``,
    ``dayofmonth``, ``hour``); None for anything else."""
    tree = parse_sql(sql)
    if tree is None:
        return None
    tree = _unwrap(tree)
    if isinstance(tree, exp.Column):
        name = column_name(tree)
        return Column(name) if name else None
    if (isinstance(tree, (exp.Cast, exp.TryCast)) and tree.to.this == exp.DataType.Type.DATE) or (
        isinstance(tree, exp.TsOrDsToDate) and not tree.args.get("format")
    ):
        function, arg = "date", tree.this
    elif isinstance(tree, exp.Year):
        function, arg = "year", tree.this
    elif isinstance(tree, exp.Month):
        function, arg = "month", tree.this
    elif isinstance(tree, (exp.Day, exp.DayOfMonth)):
        function, arg = "day", tree.this
    elif isinstance(tree, exp.Hour):
        function, arg = "hour", tree.this
    else:
        return None
    arg = _unwrap(arg)
    if function != "hour" and isinstance(arg, exp.TsOrDsToDate) and not arg.args.get("format"):
        # sqlglot reads the argument of year(), month(), day() as a date; a
        # date's year, month and day are its timestamp's. Not so the hour:
        # hour(to_date(ts)) is always 0.
        arg = arg.this
    if isinstance(arg, exp.Column) and len(arg.parts) == 1:
        return Call(function, Column(arg.name))
    return None


__all__ = [
    "NONDETERMINISTIC",
    "PER_QUERY",
    "Expression",
    "Predicate",
    "column_equality",
    "column_name",
    "column_paths",
    "column_references",
    "column_roots",
    "conjuncts",
    "function_names",
    "has_subquery",
    "literal",
    "lower",
    "nondeterministic_calls",
    "parse_condition",
    "parse_sql",
    "parse_user_sql",
    "referenced_columns",
    "sql_literal",
    "term",
]
