"""Every identifier the code puts into SQL goes through one quoting function
(:func:`airflow_delta_provider.delta.expressions.quoting.quote_identifier`),
issue 44. This test walks the package's AST and fails on:

1. SQL text built (an f-string, ``"...".format``, ``+`` or ``%`` on a string)
   and passed, directly or through a local variable, to a call that parses
   it (:data:`SINKS`: ``expr``, ``sql``, ``selectExpr``, ``filter``,
   ``where``, ``hint``, ``col`` and friends), when an interpolated value is
   not :data:`SAFE`: a call of ``quote_identifier``, of a function that
   renders SQL (a literal, a partition predicate, sqlglot's ``.sql()``), a
   constant, or a local variable assigned one of those;
2. SQL-shaped f-strings anywhere (``IS NULL``, ``AND``, ``CAST(``, ``>=``
   ...), with the same rule for their values, outside error and log messages;
3. hand-made quoting: a backtick written next to an interpolated value, or a
   backtick doubled by hand, outside the quoting module;
4. names spread (``*names``) into a call that parses strings as column names
   (:data:`NAME_SINKS`: ``hint``, ``sortWithinPartitions``, ``repartition``
   ...), unless they are built as Columns there (``F.col(quote_identifier(n))``):
   a hint's ``"col-1a2b"`` does not parse, ``"a.b"`` is a nested field.

Values that already are SQL (a user's condition, an expression the table
stores) are listed in :data:`ALLOWED`, each with the reason.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "airflow_delta_provider"
QUOTING_MODULE = PACKAGE / "delta" / "expressions" / "quoting.py"

#: Calls that parse their string arguments as SQL or as (multi-part) column names.
SINKS = frozenset(
    {
        "expr",
        "sql",
        "selectExpr",
        "filter",
        "where",
        "hint",
        "col",
        "groupBy",
        "orderBy",
        "sort",
        "sortWithinPartitions",
        "repartition",
        "repartitionByRange",
        "cube",
        "rollup",
    }
)

#: Calls that parse their string arguments as column names (rule 4).
NAME_SINKS = frozenset(
    {
        "hint",
        "sortWithinPartitions",
        "orderBy",
        "sort",
        "groupBy",
        "repartition",
        "repartitionByRange",
        "cube",
        "rollup",
    }
)

#: Calls whose value is safe inside SQL text: the quoting function, and
#: renderers of SQL (literals, predicates built of quoted names, sqlglot's output).
SAFE_CALLS = frozenset(
    {"quote_identifier", "string_literal", "sql_literal", "_literal", "partitions_condition", "unqualified_sql", "sql"}
)

#: Interpolated values that already are SQL, by (module file name, the
#: value's source text): the reason. File names, not paths, so that moving a
#: module keeps its entries.
ALLOWED: dict[tuple[str, str], str] = {
    # A generation expression the table stores (SQL text, its column
    # references rewritten through sqlglot), cast to a Spark type name.
    ("generated_columns.py", "text"): "a stored generation expression (SQL already)",
    ("generated_columns.py", "struct[column_name].dataType.simpleString()"): "a Spark type name",
    # A DATE literal: an ISO date string inside quotes, no identifier.
    ("parse.py", "value.isoformat()"): "an ISO date inside a string literal",
    # MERGE's file-pruning range: `name` is quote_identifier(column); lo/hi are sql_literal()s.
    ("merge_condition.py", "lo"): "sql_literal() of a bound",
    ("merge_condition.py", "hi"): "sql_literal() of a bound",
    # MERGE's ON condition, as the user wrote it (analysed as the user's input first).
    ("frames.py", "plan.on"): "the user's MERGE join condition",
}

#: SQL-shaped constant parts of an f-string (rule 2).
SQL_SHAPE = re.compile(
    r"\bIS (NOT )?NULL\b|\s(AND|OR)\s|\bCAST\(|\bSELECT\s|\bFROM\s|<=>|\s>=\s|\s<=\s|REBALANCE|REPARTITION"
)


def _is_built(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        sides = (node.left, node.right)
        return any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides) or any(
            _is_built(s) for s in sides
        )
    return False


def _values(node: ast.AST) -> Iterator[ast.expr]:
    """The values interpolated into a built string."""
    if isinstance(node, ast.JoinedStr):
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                yield v.value
    elif isinstance(node, ast.Call):  # "...".format(...)
        yield from node.args
        yield from (k.value for k in node.keywords)
    elif isinstance(node, ast.BinOp):
        for side in (node.left, node.right):
            if _is_built(side):
                yield from _values(side)
            elif not (isinstance(side, ast.Constant) and isinstance(side.value, str)):
                yield side


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
        if isinstance(node.func, ast.Name):
            return node.func.id
    return None


class _Checker:
    def __init__(self, module: str, tree: ast.Module) -> None:
        self.module = module
        self.tree = tree
        self.problems: list[str] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent

    def _scope(self, node: ast.AST) -> ast.AST:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return self.tree

    def _assignments(self, scope: ast.AST) -> dict[str, list[ast.expr]]:
        out: dict[str, list[ast.expr]] = {}
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                out.setdefault(n.targets[0].id, []).append(n.value)
        return out

    def _safe(self, value: ast.expr, assigned: dict[str, list[ast.expr]], depth: int = 0) -> bool:
        if isinstance(value, ast.Constant):
            return True
        if _call_name(value) in SAFE_CALLS:
            return True
        if (Path(self.module).name, ast.unparse(value)) in ALLOWED:
            return True
        if isinstance(value, ast.Name) and depth < 3 and value.id in assigned:
            return all(self._is_safe_source(v, assigned, depth + 1) for v in assigned[value.id])
        return False

    def _is_safe_source(self, value: ast.expr, assigned: dict[str, list[ast.expr]], depth: int) -> bool:
        if _is_built(value):
            return all(self._safe(v, assigned, depth) for v in _values(value))
        return self._safe(value, assigned, depth)

    def _check_built(self, built: ast.AST, where: ast.AST, what: str, assigned: dict[str, list[ast.expr]]) -> None:
        for value in _values(built):
            if not self._safe(value, assigned):
                self.problems.append(
                    f"{self.module}:{where.lineno}: {what}: {{{ast.unparse(value)}}} is not quote_identifier(...)"
                )

    def _columns_built(self, value: ast.expr, assigned: dict[str, list[ast.expr]]) -> bool:
        """``value`` (spread into a call) holds Columns built in place, not bare names."""
        if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            return isinstance(value.elt, ast.Call)
        if isinstance(value, (ast.List, ast.Tuple)):
            return all(
                isinstance(e, ast.Call) or (isinstance(e, ast.Starred) and self._columns_built(e.value, assigned))
                for e in value.elts
            )
        if isinstance(value, ast.Name) and value.id in assigned:
            return all(self._columns_built(v, assigned) for v in assigned[value.id])
        return False

    def _in_message(self, node: ast.AST) -> bool:
        """Inside an error's or a log record's construction (text for people, not SQL)."""
        while node in self.parents:
            node = self.parents[node]
            name = _call_name(node)
            if name and (
                name.endswith(("Error", "Exception", "Warning"))
                or name in {"debug", "info", "warning", "error", "lit", "print"}
            ):
                return True
            if isinstance(node, (ast.Raise, ast.FunctionDef)):
                return isinstance(node, ast.Raise)
        return False

    def run(self) -> list[str]:
        for node in ast.walk(self.tree):
            name = _call_name(node)
            if name in SINKS:
                assert isinstance(node, ast.Call)
                assigned = self._assignments(self._scope(node))
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    sources = [arg] if _is_built(arg) else []
                    if isinstance(arg, ast.Name):
                        sources = [v for v in assigned.get(arg.id, []) if _is_built(v)]
                    for built in sources:
                        self._check_built(built, node, f"SQL passed to {name}()", assigned)
            if name in NAME_SINKS:
                assert isinstance(node, ast.Call)
                assigned = self._assignments(self._scope(node))
                for arg in node.args:
                    if isinstance(arg, ast.Starred) and not self._columns_built(arg.value, assigned):
                        self.problems.append(
                            f"{self.module}:{node.lineno}: names spread into {name}() are parsed: "
                            "pass F.col(quote_identifier(name)) for each"
                        )
            if isinstance(node, ast.JoinedStr) and _is_built(node):
                constants = [v.value for v in node.values if isinstance(v, ast.Constant)]
                if any(SQL_SHAPE.search(c) for c in constants) and not self._in_message(node):
                    self._check_built(node, node, "SQL-shaped f-string", self._assignments(self._scope(node)))
                parts = node.values
                for before, after in itertools.pairwise(parts):
                    if (
                        isinstance(before, ast.Constant)
                        and str(before.value).endswith("`")
                        and isinstance(after, ast.FormattedValue)
                    ) or (
                        isinstance(before, ast.FormattedValue)
                        and isinstance(after, ast.Constant)
                        and str(after.value).startswith("`")
                    ):
                        self.problems.append(f"{self.module}:{node.lineno}: a backtick written by hand next to a value")
            if (
                name == "replace"
                and isinstance(node, ast.Call)
                and [ast.unparse(a) for a in node.args] == ["'`'", "'``'"]
            ):
                self.problems.append(f"{self.module}:{node.lineno}: a backtick doubled by hand")
        return self.problems


def problems_in(source: str, module: str = "example.py") -> list[str]:
    return _Checker(module, ast.parse(source)).run()


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != QUOTING_MODULE)


def test_every_identifier_in_sql_goes_through_quote_identifier():
    found = []
    for path in _modules():
        found += problems_in(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    assert found == [], "\n".join(found)


def test_every_allowed_value_still_exists():
    """An allow-list entry whose value is gone is stale: remove it."""
    stale = [
        key
        for key in ALLOWED
        if not any(key[1] in p.read_text(encoding="utf-8") for p in _modules() if p.name == key[0])
    ]
    assert stale == []


@pytest.mark.parametrize(
    "source",
    [
        'frame.hint("rebalance", f"{name}")',
        'F.expr(f"{column} IS NULL")',
        'frame.selectExpr("{} AS x".format(name))',
        'spark.sql("SELECT * FROM " + table)',
        "def f(c):\n    cond = f'{c} > 1'\n    return frame.filter(cond)",
        'F.col(f"`{name}`")',
        'text = "`" + name.replace("`", "``") + "`"',
        'where = f"{col} = 1 AND {other} IS NULL"',
        'frame.hint("rebalance", *partition_columns)',
        "def f(s, key):\n    ordering = [*s.partition_columns, key]\n    return frame.sortWithinPartitions(*ordering)",
    ],
)
def test_the_lint_catches_unquoted_identifiers(source):
    assert problems_in(source) != []


@pytest.mark.parametrize(
    "source",
    [
        'frame.hint("rebalance", F.col(quote_identifier(name)))',
        'F.expr(f"{quote_identifier(column)} IS NULL")',
        'F.col(f"{quote_identifier(alias)}.{quote_identifier(name)}")',
        "def f(c):\n    q = quote_identifier(c)\n    return frame.filter(f'{q} = {sql_literal(v)}')",
        'raise InvalidInputError(f"column {name} IS NULL in every row")',
        "F.expr(condition)",
        'frame.hint("rebalance", *[F.col(quote_identifier(n)) for n in partition_columns])',
        "def f(s, key):\n    ordering = [*[F.col(quote_identifier(c)) for c in s], F.col(key)]\n    return frame.sort(*ordering)",
    ],
)
def test_the_lint_accepts_quoted_identifiers(source):
    assert problems_in(source) == []
