"""The columns that lay a table's rows out over its files: Z-order and liquid clustering.

Both sort rows by a space-filling curve over range ids of the columns' values
(:mod:`airflow_delta_provider.spark.write.zorder`), and both only pay off when
a reader can skip files by the columns' min/max statistics. So a column must
exist at the top level, not be a partition column, get statistics
(``delta.dataSkippingNumIndexedCols``/``delta.dataSkippingStatsColumns``;
delta-spark's ``ClusteringColumnMissingStats``), and have a type whose files
carry bounds and whose values have quantiles: integral, decimal, date,
timestamp and string (floats carry no min/max here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.schema.fields import stats_leaves

_ORDERED = ("byte", "short", "integer", "long", "date", "timestamp", "timestamp_ntz", "string")


def orderable(delta_type: Any) -> bool:
    """Whether a column of ``delta_type`` can lay out files (see the module)."""
    return isinstance(delta_type, str) and (delta_type in _ORDERED or delta_type.startswith("decimal"))


def check_layout_columns(
    schema: Mapping[str, Any],
    partition_columns: Iterable[str],
    configuration: Mapping[str, str],
    columns: Sequence[str],
    verb: str,
) -> list[str]:
    """``columns`` as the schema spells them, or :class:`InvalidInputError`
    naming the first that cannot lay out files (``verb``: "Z-order by",
    "cluster by")."""
    fields = {f["name"].lower(): f for f in schema.get("fields", ())}
    partitions = {c.lower() for c in partition_columns}
    leaves = stats_leaves(schema, partitions, configuration)
    with_stats = {path[0].lower() for path, _type in leaves if len(path) == 1}
    out = []
    for column in columns:
        name = column.strip().strip("`")
        field = fields.get(name.lower())
        if field is None:
            raise InvalidInputError(
                f"cannot {verb} {column!r}: no such column; the table has {sorted(f['name'] for f in fields.values())}"
            )
        if name.lower() in partitions:
            raise InvalidInputError(
                f"cannot {verb} {column!r}: it is a partition column (partitions already cluster it)"
            )
        if name.lower() not in with_stats:
            raise InvalidInputError(
                f"cannot {verb} {column!r}: the table collects no statistics for it (see "
                "delta.dataSkippingNumIndexedCols and delta.dataSkippingStatsColumns), so no file could be skipped by it"
            )
        if field["type"] in ("float", "double"):
            raise InvalidInputError(
                f"cannot {verb} {column!r}: its files carry no min/max for float and double columns (a NaN "
                "could hide behind them), so no file could be skipped by it"
            )
        if not orderable(field["type"]):
            raise InvalidInputError(
                f"cannot {verb} {column!r}: its type {field['type'] if isinstance(field['type'], str) else 'complex'} "
                "has no quantiles (integral, decimal, date, timestamp and string columns can)"
            )
        out.append(field["name"])
    if len({c.lower() for c in out}) != len(out):
        raise InvalidInputError(f"a column is named twice: {list(columns)}")
    return out


__all__ = ["check_layout_columns", "orderable"]
