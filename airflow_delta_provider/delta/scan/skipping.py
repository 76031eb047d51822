"""File skipping: which data files may hold rows matching a SQL condition.

A condition (a :class:`~airflow_delta_provider.delta.expressions.parse.Predicate`)
is lowered by the shared expression layer to a small tree of
``column <op> literal`` leaves joined by AND, OR and NOT, bound here to the
table's columns (literals coerced the way Spark would), and evaluated for each
file in three-valued logic *over sets* (:mod:`~airflow_delta_provider.delta.expressions.evaluate`):
a node yields the set of truth values (TRUE, FALSE, NULL) its rows may take,
judged from the file's partition values (exact) or its min/max/nullCount
stats (bounds). A file is kept when TRUE is possible. Anything not understood
(functions, arithmetic, LIKE, column against column, nested fields, unknown
columns, literals that cannot be coerced the way Spark would) yields every
truth value, so a file is never pruned wrongly; it is only kept needlessly.

This module holds what is particular to files: the stats view. The bounds
follow delta-spark's ``DataSkippingReader``: a timestamp max is stored
truncated to milliseconds, so 1 ms is added to it; a string bound may be
truncated to 32 characters, so a long max is not trusted as an upper bound.
Float and double maxima are not trusted either: Spark sorts NaN above every
number, and writers that follow Parquet leave NaN out of their stats. A
partition column generated from a data column (delta-spark's
``OptimizablePartitionExpression``) turns a filter on the data column into
one on the partition values.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.bind import Implied, bind
from airflow_delta_provider.delta.expressions.coerce import INTEGRAL, parse_date
from airflow_delta_provider.delta.expressions.coerce import time_zone as session_time_zone
from airflow_delta_provider.delta.expressions.evaluate import NOTHING_KNOWN, Facts, T, Truths, evaluate
from airflow_delta_provider.delta.expressions.parse import Predicate
from airflow_delta_provider.delta.expressions.tree import UNKNOWN, BoundComparison, Node
from airflow_delta_provider.delta.partitions import decimal_scale, parse_partition_value
from airflow_delta_provider.delta.schema.types import VARIANT
from airflow_delta_provider.delta.table_features.column_mapping import NONE as NO_MAPPING
from airflow_delta_provider.delta.table_features.column_mapping import physical_name_of
from airflow_delta_provider.delta.table_features.generated_columns import (
    PartitionDerivation,
    derived_comparison,
    partition_derivations,
)
from airflow_delta_provider.delta.table_features.type_widening import stats_type

_NO_STATS = object()

# --- The table's columns -------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str  # as the schema spells it
    type: str  # Delta type, lower case ("" for a nested type)
    is_partition: bool
    key: str  # in stats and partitionValues: the physical name under column mapping
    stats_type: str = ""  # the type min/max stats are read as ("": unused); see type_widening.stats_type


def _schema(schema: Mapping[str, Any] | str) -> Mapping[str, Any]:
    return json.loads(schema) if isinstance(schema, str) else schema


def _fields(schema: Mapping[str, Any] | str, partition_columns: Iterable[str], mapping_mode: str) -> dict[str, _Field]:
    schema = _schema(schema)
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


def _implied(derived: Mapping[str, list[PartitionDerivation]], fields: Mapping[str, _Field], tz: dt.tzinfo) -> Implied:
    """The bounds on partition columns generated from a compared column (see :func:`_derived_bound`)."""

    def implied(source: _Field, op: str, value: Any) -> list[Node]:
        return [_derived_bound(d, source, op, value, fields, tz) for d in derived.get(source.name.lower(), ())]

    return implied


def _derived_bound(
    derivation: PartitionDerivation, source: _Field, op: str, value: Any, fields: Mapping[str, _Field], tz: dt.tzinfo
) -> Node:
    """The bound on a partition column generated from ``source`` that ``source <op> value``
    implies (delta-spark's ``OptimizablePartitionExpression``); unknown when there is none.
    ANDed to the source's own bound it changes no row's truth value (the implied
    comparison holds whenever the source's does, and is NULL when the source is
    NULL), so it holds under NOT as well: it only lets partition values rule files out."""
    target = fields.get(derivation.partition_column.lower())
    if target is None or (derivation.kind == "identity" and target.type != source.type):
        return UNKNOWN
    got = derived_comparison(derivation.kind, source.type, op, value, tz)
    return UNKNOWN if got is None else BoundComparison(target, got[0], got[1])


# --- What one file says about one column ------------------------------------


class _FileView:
    """Lazily computed facts about the columns of one file."""

    def __init__(self, add: AddFile, fields: Mapping[str, _Field]) -> None:
        self._add = add
        self._fields = fields
        self._facts: dict[str, Facts] = {}
        self._stats: Any = _NO_STATS

    def facts(self, field: _Field) -> Facts:
        got = self._facts.get(field.name)
        if got is None:
            got = self._partition_facts(field) if field.is_partition else self._stats_facts(field)
            self._facts[field.name] = got
        return got

    def _partition_facts(self, field: _Field) -> Facts:
        pv = self._add.partition_values
        raw = pv.get(field.key)
        if raw is None and field.key not in pv:
            raw = next((v for k, v in pv.items() if k.lower() == field.key.lower()), None)
        try:
            value = parse_partition_value(raw, field.type)
        except InvalidInputError:
            return NOTHING_KNOWN
        return Facts.exact(value)

    def _load_stats(self) -> Mapping[str, Any] | None:
        if self._stats is _NO_STATS:
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

    def _stats_facts(self, field: _Field) -> Facts:
        if field.type == VARIANT:
            return NOTHING_KNOWN  # variant stats are never used (we write none)
        stats = self._load_stats()
        if stats is None:
            return NOTHING_KNOWN
        num_records = stats.get("numRecords")
        null_count = (stats.get("nullCount") or {}).get(field.key)
        may_null = not isinstance(null_count, int) or null_count > 0
        may_value = not (isinstance(null_count, int) and isinstance(num_records, int)) or num_records > null_count
        if isinstance(num_records, int) and num_records == 0:
            may_null = may_value = False
        lo = _bound((stats.get("minValues") or {}).get(field.key), field.stats_type, upper=False)
        hi = _bound((stats.get("maxValues") or {}).get(field.key), field.stats_type, upper=True)
        return Facts(lo, hi, may_null, may_value)


def _bound(raw: Any, col_type: str, upper: bool) -> Any:
    """A stats min (or max, with ``upper``) as a safe bound; None if unusable."""
    if raw is None or isinstance(raw, (dict, list)):
        return None
    try:
        if col_type in INTEGRAL:
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
            return raw if isinstance(raw, dt.date) and not isinstance(raw, dt.datetime) else parse_date(str(raw))
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


# --- Public API ---------------------------------------------------------------


def _prepare(
    predicate: Predicate,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    time_zone: str,
    mapping_mode: str,
    partition_only: bool = False,
) -> tuple[Node, dict[str, _Field]]:
    """The predicate's tree bound to the table's columns (only its partition
    columns with ``partition_only``: data columns become unknown)."""
    schema = _schema(schema)
    partition_columns = list(partition_columns)
    fields = _fields(schema, partition_columns, mapping_mode)
    if partition_only:
        fields = {k: f for k, f in fields.items() if f.is_partition}
    tz = session_time_zone(time_zone)
    derived: dict[str, list[PartitionDerivation]] = {}
    for d in partition_derivations(schema, partition_columns):
        derived.setdefault(d.source_column.lower(), []).append(d)
    return bind(predicate.tree, fields, tz, _implied(derived, fields, tz)), fields


def _truths(tree: Node, add: AddFile, fields: Mapping[str, _Field]) -> Truths:
    return evaluate(tree, _FileView(add, fields).facts)


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
    return [f for f in files if T in _truths(tree, f, fields)]


def partition_matcher(
    predicate: Predicate,
    schema: Mapping[str, Any] | str,
    partition_columns: Iterable[str],
    *,
    time_zone: str = "UTC",
    mapping_mode: str = NO_MAPPING,
) -> Callable[[AddFile], bool]:
    """A test of whether every row of a file matches, decided from its partition
    values alone (the predicate is bound once).

    Exact: the test raises InvalidInputError when the predicate cannot be
    decided from partition values (it reads a data column, or something the
    skipper does not understand).
    """
    tree, fields = _prepare(predicate, schema, list(partition_columns), time_zone, mapping_mode, partition_only=True)

    def matches(add: AddFile) -> bool:
        truths = _truths(tree, add, fields)
        if len(truths) > 1:
            raise InvalidInputError(f"condition {predicate.sql!r} cannot be decided from partition values alone")
        return truths == {T}

    return matches


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
        truths = _truths(tree, f, fields)
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
    if field is None or field.type not in INTEGRAL or not keys:
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


__all__ = ["Predicate", "partition_filter", "partition_matcher", "prune_by_keys", "prune_files"]
