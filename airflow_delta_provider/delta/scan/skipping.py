"""File skipping: which data files may hold rows matching a SQL condition.

A condition (Spark SQL, parsed with sqlglot) is lowered to a small tree of
``column <op> literal`` leaves joined by AND, OR and NOT. Each file is then
evaluated in three-valued logic *over sets*: a node yields the set of truth
values (TRUE, FALSE, NULL) its rows may take, judged from the file's partition
values (exact) or its min/max/nullCount stats (bounds). A file is kept when
TRUE is possible. Anything the skipper does not understand (functions,
arithmetic, LIKE, column against column, nested fields, unknown columns,
literals it cannot coerce the way Spark would) yields every truth value, so
a file is never pruned wrongly; it is only kept needlessly.

The bounds follow delta-spark's ``DataSkippingReader``: a timestamp max is
stored truncated to milliseconds, so 1 ms is added to it; a string bound may
be truncated to 32 characters, so a long max is not trusted as an upper
bound. Float and double maxima are not trusted either: Spark sorts NaN above
every number, and writers that follow Parquet leave NaN out of their stats.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import math
import zoneinfo
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.table_features.column_mapping import NONE as NO_MAPPING, physical_name_of
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table_features.generated_columns import (
    PartitionDerivation,
    derived_comparison,
    partition_derivations,
)
from airflow_delta_provider.delta.schema.types import VARIANT
from airflow_delta_provider.delta.table_features.type_widening import stats_type
from airflow_delta_provider.delta.partitions import (
    decimal_scale,
    parse_partition_value,
    to_float32,
)

# --- Truth-value sets ---------------------------------------------------------

T, F, N = "T", "F", "N"
Truths = frozenset  # of "T" / "F" / "N"
ANY: Truths = frozenset((T, F, N))
NONE: Truths = frozenset()

_NOT = {T: F, F: T, N: N}


def _and3(a: str, b: str) -> str:
    return F if F in (a, b) else N if N in (a, b) else T


def _or3(a: str, b: str) -> str:
    return T if T in (a, b) else N if N in (a, b) else F


def _combine(op: Callable[[str, str], str], a: Truths, b: Truths) -> Truths:
    return frozenset(op(x, y) for x in a for y in b)


# --- The lowered predicate ---------------------------------------------------


@dataclass(frozen=True)
class _Lit:
    """A literal as Spark types it: kind is one of int, decimal, double, float,
    string, bool, date, timestamp, timestamp_ntz (the last three hold text)."""

    kind: str
    value: Any


@dataclass(frozen=True)
class _Cmp:
    column: str
    op: str  # = != < <= > >= <=>
    literal: _Lit


@dataclass(frozen=True)
class _IsNull:
    column: str


@dataclass(frozen=True)
class _Not:
    child: _Node


@dataclass(frozen=True)
class _And:
    left: _Node
    right: _Node


@dataclass(frozen=True)
class _Or:
    left: _Node
    right: _Node


@dataclass(frozen=True)
class _Const:
    truths: Truths


_Node = Union[_Cmp, _IsNull, _Not, _And, _Or, _Const]
_UNKNOWN = _Const(ANY)
_NULL = _Const(frozenset((N,)))

_OPS: dict[type, str] = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.NullSafeEQ: "<=>"}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}

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


def _column_name(node: exp.Expression) -> str | None:
    """The name of a plain top-level column reference, else None."""
    if isinstance(node, exp.Paren):
        return _column_name(node.this)
    if isinstance(node, exp.Column) and len(node.parts) == 1:
        return node.name
    return None


def _number(text: str) -> _Lit:
    if any(c in text for c in "eE"):
        return _Lit("double", float(text))
    if "." in text:
        return _Lit("decimal", Decimal(text))
    return _Lit("int", int(text))


def _literal(node: exp.Expression) -> _Lit | None:
    """The literal ``node`` denotes: ``_Lit("null", None)`` for NULL, and None
    when ``node`` is not a literal this module understands."""
    try:
        if isinstance(node, exp.Paren):
            return _literal(node.this)
        if isinstance(node, exp.Null):
            return _Lit("null", None)
        if isinstance(node, exp.Boolean):
            return _Lit("bool", bool(node.this))
        if isinstance(node, exp.Literal):
            return _Lit("string", node.this) if node.is_string else _number(node.this)
        if isinstance(node, exp.Neg):
            inner = _literal(node.this)
            if inner is not None and inner.kind in ("int", "decimal", "double", "float"):
                return _Lit(inner.kind, -inner.value)
            return None
        if isinstance(node, (exp.Cast, exp.TryCast)):
            inner = _literal(node.this)
            kind = _CAST_KINDS.get(node.to.this)
            if inner is None or kind is None:
                return None
            if inner.kind == "null":
                return inner
            return _cast_literal(inner, kind)
    except (ValueError, InvalidOperation, OverflowError):
        return None
    return None


def _cast_literal(lit: _Lit, kind: str) -> _Lit | None:
    """A literal ``CAST``: only the conversions whose result is certain."""
    if kind in ("date", "timestamp", "timestamp_ntz"):
        return _Lit(kind, lit.value) if lit.kind == "string" else None
    if kind == "string":
        return lit if lit.kind == "string" else None
    if kind == "bool":
        return lit if lit.kind == "bool" else None
    if lit.kind not in ("int", "decimal", "string"):
        return lit if lit.kind == kind else None
    text = str(lit.value).strip()
    if kind == "int":
        return _Lit("int", int(text))
    if kind == "decimal":
        return _Lit("decimal", Decimal(text))
    if kind == "double":
        return _Lit("double", float(Decimal(text)))
    return _Lit("float", to_float32(float(Decimal(text))))


def _lower(node: exp.Expression) -> _Node:
    """Lower a sqlglot expression to the skipper's tree."""
    if isinstance(node, exp.Paren):
        return _lower(node.this)
    if isinstance(node, exp.And):
        return _And(_lower(node.this), _lower(node.expression))
    if isinstance(node, exp.Or):
        return _Or(_lower(node.this), _lower(node.expression))
    if isinstance(node, exp.Not):
        return _Not(_lower(node.this))
    if type(node) in _OPS:
        return _comparison(_OPS[type(node)], node.this, node.expression)
    if isinstance(node, exp.Is):
        col = _column_name(node.this)
        if col is not None and isinstance(node.expression, exp.Null):
            return _IsNull(col)
        return _UNKNOWN
    if isinstance(node, exp.In):
        if any(node.args.get(k) for k in ("query", "unnest", "field")) or not node.expressions:
            return _UNKNOWN
        return _any_of([_comparison("=", node.this, item) for item in node.expressions])
    if isinstance(node, exp.Between):
        return _And(_comparison(">=", node.this, node.args["low"]), _comparison("<=", node.this, node.args["high"]))
    col = _column_name(node)
    if col is not None:  # a bare (boolean) column
        return _Cmp(col, "=", _Lit("bool", True))
    lit = _literal(node)
    if lit is not None:
        if lit.kind == "null":
            return _NULL
        if lit.kind == "bool":
            return _Const(frozenset((T if lit.value else F,)))
    return _UNKNOWN


def _any_of(leaves: list[_Node]) -> _Node:
    """OR of ``leaves`` as a balanced tree, so long IN lists stay shallow."""
    if len(leaves) == 1:
        return leaves[0]
    mid = len(leaves) // 2
    return _Or(_any_of(leaves[:mid]), _any_of(leaves[mid:]))


def _comparison(op: str, left: exp.Expression, right: exp.Expression) -> _Node:
    col, lit = _column_name(left), _literal(right)
    if col is None or lit is None:
        col, lit, op = _column_name(right), _literal(left), _FLIPPED[op]
    if col is None or lit is None:
        return _UNKNOWN
    if lit.kind == "null":
        return _IsNull(col) if op == "<=>" else _NULL
    return _Cmp(col, op, lit)


def _walk(node: _Node) -> Iterable[_Node]:
    yield node
    if isinstance(node, _Not):
        yield from _walk(node.child)
    elif isinstance(node, (_And, _Or)):
        yield from _walk(node.left)
        yield from _walk(node.right)


@dataclass(frozen=True)
class Predicate:
    """A parsed SQL condition, as the skipper understands it.

    ``sql`` is the text as given; ``expression`` the sqlglot tree (the Spark
    layer may reuse it).
    """

    sql: str
    expression: exp.Expression

    @classmethod
    def parse(cls, sql: str) -> Predicate:
        """Parse a Spark SQL boolean condition; bad syntax is an InvalidInputError."""
        if not sql or not sql.strip():
            raise InvalidInputError("the condition is empty")
        try:
            tree = sqlglot.parse_one(sql, read="spark")
        except SqlglotError as e:
            raise InvalidInputError(f"cannot parse condition {sql!r}: {e}") from e
        if not isinstance(tree, exp.Condition):
            raise InvalidInputError(f"condition {sql!r} is not a boolean expression")
        if tree.find(exp.Query) is not None:
            raise InvalidInputError(f"condition {sql!r} holds a subquery, which is not supported")
        return cls(sql=sql, expression=tree)

    @property
    def columns(self) -> frozenset[str]:
        """Top-level column names referenced, spelled as written."""
        return frozenset(c.parts[0].name for c in self.expression.find_all(exp.Column))

    def is_partition_only(self, partition_columns: Iterable[str]) -> bool:
        """True when every referenced column is a partition column (case-insensitive).

        This is delta-spark's split of a condition into partition and data
        filters. Whether the skipper can *decide* the condition exactly from
        partition values is a further question: see :func:`partition_filter`.
        """
        parts = {c.lower() for c in partition_columns}
        return all(c.lower() in parts for c in self.columns)

    @property
    def _tree(self) -> _Node:
        tree = self.__dict__.get("_lowered")
        if tree is None:
            tree = _lower(self.expression)
            object.__setattr__(self, "_lowered", tree)
        return tree

    def __str__(self) -> str:
        return self.sql


# --- Binding to a schema -----------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str  # as the schema spells it
    type: str  # Delta type, lower case ("" for a nested type)
    is_partition: bool
    key: str  # in stats and partitionValues: the physical name under column mapping
    stats_type: str = ""  # the type min/max stats are read as ("": unused); see type_widening.stats_type


@dataclass(frozen=True)
class _Bound:
    """A comparison bound to a column and with its literal coerced."""

    field: _Field
    op: str
    value: Any


@dataclass(frozen=True)
class _BoundIsNull:
    field: _Field


def _fields(schema: Mapping[str, Any] | str, partition_columns: Iterable[str], mapping_mode: str) -> dict[str, _Field]:
    if isinstance(schema, str):
        schema = json.loads(schema)
    parts = {c.lower() for c in partition_columns}
    return {
        f["name"].lower(): _Field(
            f["name"],
            f["type"].lower() if isinstance(f["type"], str) else "",
            f["name"].lower() in parts,
            physical_name_of(f, mapping_mode),
            stats_type(f),
        )
        for f in schema.get("fields", ())
    }


def _parse_timestamp(text: str, tz: dt.tzinfo) -> dt.datetime:
    ts = dt.datetime.fromisoformat(text.strip())
    return ts.replace(tzinfo=tz) if ts.tzinfo is None else ts


def _parse_date(text: str) -> dt.date:
    text = text.strip()
    if len(text) > 10 and text[10] in " T":  # Spark's cast keeps the date part
        text = text[:10]
    return dt.date.fromisoformat(text)


_INTEGRAL = ("byte", "short", "integer", "long")
_NO_VALUE = object()


def _coerce(lit: _Lit, col_type: str, tz: dt.tzinfo) -> Any:
    """``lit`` as a value comparable with the column, the way Spark compares
    them; ``_NO_VALUE`` where Spark's coercion is not certain to match."""
    k, v = lit.kind, lit.value
    try:
        if col_type in _INTEGRAL:
            if k in ("int", "decimal"):
                return v
            # Spark compares in double: exact only below 2**53.
            if k == "double" and math.isfinite(v) and abs(v) < 2**53:
                return v
        elif col_type in ("float", "double"):
            if k == "int":
                return to_float32(float(v)) if col_type == "float" else (float(v) if abs(v) <= 2**53 else _NO_VALUE)
            if k == "decimal":
                return float(v)
            if k in ("double", "float"):
                return v
        elif decimal_scale(col_type) is not None:
            if k in ("int", "decimal"):
                return Decimal(v)
        elif col_type == "string":
            if k == "string":
                return v
        elif col_type == "boolean":
            if k == "bool":
                return v
        elif col_type == "date":
            if k in ("date", "string"):
                return _parse_date(v)
        elif col_type == "timestamp":
            if k in ("timestamp", "string"):
                return _parse_timestamp(v, tz)
            if k == "date":
                return dt.datetime.combine(_parse_date(v), dt.time(), tz)
        elif col_type == "timestamp_ntz":
            if k in ("timestamp_ntz", "string"):
                ts = dt.datetime.fromisoformat(v.strip())
                return ts if ts.tzinfo is None else _NO_VALUE
            if k == "date":
                return dt.datetime.combine(_parse_date(v), dt.time())
    except (ValueError, TypeError, InvalidOperation, OverflowError):
        return _NO_VALUE
    return _NO_VALUE


def _bind(
    node: _Node,
    fields: Mapping[str, _Field],
    tz: dt.tzinfo,
    derived: Mapping[str, list[PartitionDerivation]] | None = None,
) -> Any:
    if isinstance(node, _Not):
        return _Not(_bind(node.child, fields, tz, derived))
    if isinstance(node, _And):
        return _And(_bind(node.left, fields, tz, derived), _bind(node.right, fields, tz, derived))
    if isinstance(node, _Or):
        return _Or(_bind(node.left, fields, tz, derived), _bind(node.right, fields, tz, derived))
    if isinstance(node, (_Cmp, _IsNull)):
        field = fields.get(node.column.lower())
        if field is None:
            return _UNKNOWN
        if isinstance(node, _IsNull):
            return _BoundIsNull(field)
        value = _coerce(node.literal, field.type, tz)
        if value is _NO_VALUE:
            return _UNKNOWN
        bound: Any = _Bound(field, node.op, value)
        for derivation in (derived or {}).get(field.name.lower(), ()):
            bound = _And(bound, _derived_bound(derivation, field, node.op, value, fields, tz))
        return bound
    return node


def _derived_bound(
    derivation: PartitionDerivation, source: _Field, op: str, value: Any, fields: Mapping[str, _Field], tz: dt.tzinfo
) -> Any:
    """The bound on a partition column generated from ``source`` that ``source <op> value``
    implies (delta-spark's ``OptimizablePartitionExpression``); unknown when there is none.
    ANDed to the source's own bound it changes no row's truth value (the implied
    comparison holds whenever the source's does, and is NULL when the source is
    NULL), so it holds under NOT as well: it only lets partition values rule files out."""
    target = fields.get(derivation.partition_column.lower())
    if target is None or (derivation.kind == "identity" and target.type != source.type):
        return _UNKNOWN
    got = derived_comparison(derivation.kind, source.type, op, value, tz)
    return _UNKNOWN if got is None else _Bound(target, got[0], got[1])


# --- What one file says about one column ------------------------------------


@dataclass(frozen=True)
class _Facts:
    """Bounds of the non-null values of a column in a file (None: unbounded)."""

    lo: Any
    hi: Any
    may_null: bool
    may_value: bool


_NOTHING_KNOWN = _Facts(None, None, True, True)


def _spark_cmp(a: Any, b: Any) -> int:
    """Compare like Spark: NaN equals NaN and sorts above every number."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    return (a > b) - (a < b)


def _leaf(op: str, f: _Facts, v: Any) -> Truths:
    """Truth values ``x <op> v`` may take over the rows a file's facts allow."""
    out = {N} if f.may_null and op != "<=>" else set()
    if f.may_value:
        lo, hi = f.lo, f.hi
        try:
            le_lo = lo is None or _spark_cmp(lo, v) <= 0  # some x <= v may exist
            lt_lo = lo is None or _spark_cmp(lo, v) < 0
            ge_hi = hi is None or _spark_cmp(hi, v) >= 0  # some x >= v may exist
            gt_hi = hi is None or _spark_cmp(hi, v) > 0
        except TypeError:
            return ANY
        eq_may = le_lo and ge_hi
        eq_sure = not lt_lo and not gt_hi  # lo == hi == v
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
    if op == "<=>" and f.may_null:
        out.add(F)
    return frozenset(out)


def _is_null(f: _Facts) -> Truths:
    return frozenset(([T] if f.may_null else []) + ([F] if f.may_value else []))


class _FileView:
    """Lazily computed facts about the columns of one file."""

    def __init__(self, add: AddFile, fields: Mapping[str, _Field]) -> None:
        self._add = add
        self._fields = fields
        self._facts: dict[str, _Facts] = {}
        self._stats: Any = _NO_VALUE

    def facts(self, field: _Field) -> _Facts:
        got = self._facts.get(field.name)
        if got is None:
            got = self._partition_facts(field) if field.is_partition else self._stats_facts(field)
            self._facts[field.name] = got
        return got

    def _partition_facts(self, field: _Field) -> _Facts:
        pv = self._add.partition_values
        raw = pv.get(field.key)
        if raw is None and field.key not in pv:
            raw = next((v for k, v in pv.items() if k.lower() == field.key.lower()), None)
        try:
            value = parse_partition_value(raw, field.type)
        except InvalidInputError:
            return _NOTHING_KNOWN
        return _Facts(value, value, value is None, value is not None)

    def _load_stats(self) -> Mapping[str, Any] | None:
        if self._stats is _NO_VALUE:
            stats = None
            if self._add.stats:
                try:
                    # Decimal keeps decimal bounds exact; floats are rebuilt from it.
                    stats = json.loads(self._add.stats, parse_float=Decimal)
                except ValueError:
                    stats = None
            elif self._add.stats_parsed is not None:
                stats = self._add.stats_parsed
            self._stats = stats if isinstance(stats, Mapping) else None
        return self._stats

    def _stats_facts(self, field: _Field) -> _Facts:
        if field.type == VARIANT:
            return _NOTHING_KNOWN  # variant stats are never used (we write none)
        stats = self._load_stats()
        if stats is None:
            return _NOTHING_KNOWN
        num_records = stats.get("numRecords")
        null_count = (stats.get("nullCount") or {}).get(field.key)
        may_null = not isinstance(null_count, int) or null_count > 0
        may_value = not (isinstance(null_count, int) and isinstance(num_records, int)) or num_records > null_count
        if isinstance(num_records, int) and num_records == 0:
            may_null = may_value = False
        lo = _bound((stats.get("minValues") or {}).get(field.key), field.stats_type, upper=False)
        hi = _bound((stats.get("maxValues") or {}).get(field.key), field.stats_type, upper=True)
        return _Facts(lo, hi, may_null, may_value)


def _bound(raw: Any, col_type: str, upper: bool) -> Any:
    """A stats min (or max, with ``upper``) as a safe bound; None if unusable."""
    if raw is None or isinstance(raw, (dict, list)):
        return None
    try:
        if col_type in _INTEGRAL:
            if isinstance(raw, bool) or int(raw) != raw:
                return None
            return int(raw)
        if col_type in ("float", "double"):
            if upper:
                return None  # NaN may hide above any stored max (see module doc)
            value = float(raw)
            if math.isnan(value):
                return None
            if col_type == "float" and value != 0:
                # A float32 printed in short decimal form and read back as a
                # double is off by up to half a float32 ulp: widen by more.
                value -= abs(value) * 2.0**-21 + (2.0**-149 if abs(value) < 2.0**-126 else 0.0)
            return value
        if decimal_scale(col_type) is not None:
            return raw if isinstance(raw, Decimal) else Decimal(str(raw))
        if col_type == "string":
            if not isinstance(raw, str):
                return None
            # A max of 32+ UTF-16 units may have been cut (delta-spark cuts at 32).
            if upper and len(raw.encode("utf-16-le")) // 2 >= 32:
                return None
            return raw
        if col_type == "date":
            return raw if isinstance(raw, dt.date) and not isinstance(raw, dt.datetime) else _parse_date(str(raw))
        if col_type in ("timestamp", "timestamp_ntz"):
            if isinstance(raw, dt.datetime):
                ts = raw
            else:
                ts = dt.datetime.fromisoformat(str(raw))
            if col_type == "timestamp" and ts.tzinfo is None:
                ts = ts.replace(tzinfo=dt.timezone.utc)
            if col_type == "timestamp_ntz" and ts.tzinfo is not None:
                return None
            # Stats hold milliseconds; the true max may be up to 1 ms later.
            return ts + dt.timedelta(milliseconds=1) if upper else ts
        if col_type == "boolean":
            return raw if isinstance(raw, bool) else None
    except (ValueError, TypeError, InvalidOperation, OverflowError):
        return None
    return None


def _eval(node: Any, view: _FileView) -> Truths:
    if isinstance(node, _Bound):
        return _leaf(node.op, view.facts(node.field), node.value)
    if isinstance(node, _BoundIsNull):
        return _is_null(view.facts(node.field))
    if isinstance(node, _And):
        return _combine(_and3, _eval(node.left, view), _eval(node.right, view))
    if isinstance(node, _Or):
        return _combine(_or3, _eval(node.left, view), _eval(node.right, view))
    if isinstance(node, _Not):
        return frozenset(_NOT[x] for x in _eval(node.child, view))
    if isinstance(node, _Const):
        return node.truths
    return ANY


# --- Public API ---------------------------------------------------------------


def _prepare(
    predicate: Predicate,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    time_zone: str,
    mapping_mode: str,
    partition_only: bool = False,
) -> tuple[Any, dict[str, _Field]]:
    if isinstance(schema, str):
        schema = json.loads(schema)
    partition_columns = list(partition_columns)
    fields = _fields(schema, partition_columns, mapping_mode)
    if partition_only:  # data columns become unknown
        fields = {k: f for k, f in fields.items() if f.is_partition}
    try:
        tz: dt.tzinfo = zoneinfo.ZoneInfo(time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidInputError(f"unknown time zone {time_zone!r}") from e
    derived: dict[str, list[PartitionDerivation]] = {}
    for d in partition_derivations(schema, partition_columns):
        derived.setdefault(d.source_column.lower(), []).append(d)
    return _bind(predicate._tree, fields, tz, derived), fields


def prune_files(
    files: Iterable[AddFile],
    predicate: Predicate | None,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    *,
    time_zone: str = "UTC",
    mapping_mode: str = NO_MAPPING,
) -> list[AddFile]:
    """The files that may hold rows matching ``predicate``, in input order.

    ``schema`` is the table's Delta schema (dict or JSON string). A file
    without stats, or without stats for a column, is kept. ``time_zone`` is
    Spark's session time zone, used for timestamp literals without an offset.
    Without a predicate every file is returned. ``mapping_mode`` is the
    table's column mapping mode: stats and partition values are keyed by
    physical names under ``name`` and ``id``.
    """
    files = list(files)
    if predicate is None:
        return files
    tree, fields = _prepare(predicate, schema, partition_columns, time_zone, mapping_mode)
    return [f for f in files if T in _eval(tree, _FileView(f, fields))]


def matches_partition(
    add: AddFile,
    predicate: Predicate,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    *,
    time_zone: str = "UTC",
    mapping_mode: str = NO_MAPPING,
) -> bool:
    """Whether every row of ``add`` matches, decided from partition values alone.

    Exact: raises InvalidInputError when the predicate cannot be decided from
    partition values (it reads a data column, or something the skipper does
    not understand).
    """
    partition_columns = list(partition_columns)
    tree, fields = _prepare(predicate, schema, partition_columns, time_zone, mapping_mode, partition_only=True)
    truths = _eval(tree, _FileView(add, fields))
    if len(truths) > 1:
        raise InvalidInputError(f"condition {predicate.sql!r} cannot be decided from partition values alone")
    return truths == {T}


def partition_filter(
    files: Iterable[AddFile],
    predicate: Predicate,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    *,
    time_zone: str = "UTC",
    mapping_mode: str = NO_MAPPING,
) -> list[AddFile] | None:
    """The files all of whose rows match, when partition values decide it.

    Returns None when the predicate is not decided exactly by partition
    values for every file; the caller must then look at the rows (delta-spark's
    data-predicate path). A non-None result lets an UPDATE or DELETE treat
    each returned file as wholly matching.
    """
    partition_columns = list(partition_columns)
    if not predicate.is_partition_only(partition_columns):
        return None
    tree, fields = _prepare(predicate, schema, partition_columns, time_zone, mapping_mode, partition_only=True)
    kept = []
    for f in files:
        truths = _eval(tree, _FileView(f, fields))
        if len(truths) > 1:
            return None
        if truths == {T}:
            kept.append(f)
    return kept


def prune_by_keys(
    files: Iterable[AddFile],
    column: str,
    keys: Sequence[int],
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    *,
    mapping_mode: str = NO_MAPPING,
) -> list[AddFile]:
    """The files that may hold a row whose integral ``column`` equals one of
    ``keys`` (sorted, without NULL), in input order.

    A MERGE's join ``t.k = s.k`` with a small source: a file is kept when
    some key lies within its ``[min, max]`` of ``column`` (its partition
    value, for a partition column), which the source's overall min and max
    cannot tell for a file that falls between two clusters of keys. A file
    whose column is all NULL cannot match (NULL equals nothing); one without
    usable bounds, or a column that is not integral, keeps every file.
    """
    files = list(files)
    field = _fields(schema, partition_columns, mapping_mode).get(column.lower())
    if field is None or field.type not in _INTEGRAL or not keys:
        return files if keys else []
    fields = {field.name.lower(): field}
    out = []
    for f in files:
        facts = _FileView(f, fields).facts(field)
        if not facts.may_value:
            continue
        if facts.lo is None or facts.hi is None:
            out.append(f)
            continue
        i = bisect.bisect_left(keys, facts.lo)
        if i < len(keys) and keys[i] <= facts.hi:
            out.append(f)
    return out


__all__ = ["Predicate", "matches_partition", "partition_filter", "prune_by_keys", "prune_files"]
