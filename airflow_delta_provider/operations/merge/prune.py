"""The MERGE's candidate files: those that may hold a row a clause acts on.

One aggregation counts the source's rows and takes the min and max of each
join key (``t.k = s.k``); with the join condition's target-only conjuncts
they prune files by partition values and stats
(:mod:`~airflow_delta_provider.delta.scan.merge_condition`), and a small
source's integral keys prune file by file. ``not_matched_by_source`` needs
every target row: no pruning.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.scan.merge_condition import JoinFacts, key_range_sql
from airflow_delta_provider.delta.scan.skipping import (
    Predicate,
    prune_by_keys,
    prune_files,
)
from airflow_delta_provider.delta.schema.types import type_name
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.operations.dml.copy_on_write import elapsed_ms
from airflow_delta_provider.operations.merge.clauses import (
    NOT_MATCHED_BY_SOURCE,
    MergeClause,
)

#: Key types whose min/max bound a column exactly, by kind (source and target must share one).
_KEY_KINDS = {
    "byte": "integral",
    "short": "integral",
    "integer": "integral",
    "long": "integral",
    "date": "date",
    "string": "string",
}
#: Up to how many source rows the source's keys are collected to prune files
#: one by one (8 bytes a key: 16 MB at most on the driver).
KEY_SET_ROWS = 2_000_000


@dataclass(frozen=True)
class Candidates:
    """What pruning found: the source's row count, the predicate the
    candidates were pruned by (None: none, every file was read, for conflict
    checks), the candidate files, and the time the source jobs took."""

    source_rows: int
    predicate: Predicate | None
    files: tuple[AddFile, ...]
    scan_ms: int


def prune(snapshot: Snapshot, source: DataFrame, facts: JoinFacts, clauses: Sequence[MergeClause]) -> Candidates:
    """The files of ``snapshot`` that may hold a matched row: pruned by the
    source's key ranges and the target-only conjuncts, then, for a source of
    at most :data:`KEY_SET_ROWS` rows, by its set of keys."""
    everything = any(c.when == NOT_MATCHED_BY_SOURCE for c in clauses)  # every target row may be acted on
    start = time.monotonic()
    pairs = [] if everything else _range_pairs(snapshot, source, facts)
    source_rows, predicate = _source_facts(source, facts, pairs, everything)
    scan_ms = elapsed_ms(start)
    if everything:
        return Candidates(source_rows, predicate, tuple(snapshot.files), scan_ms)
    if not source_rows:
        return Candidates(source_rows, predicate, (), scan_ms)  # an empty source matches nothing
    files = _pruned(snapshot, predicate)
    pair = next((p for p in pairs if _kind(snapshot, p[0]) == "integral"), None)
    if pair is None or source_rows > KEY_SET_ROWS or len(files) <= 1:
        return Candidates(source_rows, predicate, tuple(files), scan_ms)
    start = time.monotonic()
    keys = _source_keys(source, pair[1])
    scan_ms += elapsed_ms(start)
    kept = prune_by_keys(
        files, pair[0], keys, snapshot.schema, snapshot.partition_columns, mapping_mode=snapshot.column_mapping.mode
    )
    return Candidates(source_rows, predicate, tuple(kept), scan_ms)


def _source_facts(
    source: DataFrame, facts: JoinFacts, pairs: list[tuple[str, str]], everything: bool
) -> tuple[int, Predicate | None]:
    """Count the source's rows and, when pruning may use them, the range
    of each join key; the pruning predicate (None: read every file)."""
    aggs = [F.count(F.lit(1)).alias("n")]
    for j, (_target, source_column) in enumerate(pairs):
        ref = F.col(quote_identifier(source_column))
        aggs += [F.min(ref).alias(f"lo{j}"), F.max(ref).alias(f"hi{j}")]
    row = source.agg(*aggs).collect()[0]
    source_rows = int(row["n"])
    if everything:
        return source_rows, None
    parts = [facts.target_filter] if facts.target_filter else []
    for j, (target, _source) in enumerate(pairs):
        sql = key_range_sql(target, row[f"lo{j}"], row[f"hi{j}"])
        if sql is not None:
            parts.append(sql)
    if not parts:
        return source_rows, None
    try:
        return source_rows, Predicate.parse(" AND ".join(f"({p})" for p in parts))
    except InvalidInputError:
        return source_rows, None


def _range_pairs(snapshot: Snapshot, source: DataFrame, facts: JoinFacts) -> list[tuple[str, str]]:
    """The join's key pairs whose source min/max bound the target column exactly."""
    source_types = {f.name: f.dataType.typeName() for f in source.schema.fields}
    out = []
    for target, source_column in facts.key_pairs:
        t = _kind(snapshot, target)
        if t is not None and t == _KEY_KINDS.get(source_types[source_column]):
            out.append((target, source_column))
    return out


def _kind(snapshot: Snapshot, column: str) -> str | None:
    """The key kind of a table column (integral, date, string), or None."""
    delta_type = next(f["type"] for f in snapshot.schema["fields"] if f["name"] == column)
    return _KEY_KINDS.get(type_name(delta_type)) if isinstance(delta_type, str) else None


def _pruned(snapshot: Snapshot, predicate: Predicate | None) -> list[AddFile]:
    """The live files that may hold rows matching ``predicate`` (every file for None)."""
    if predicate is None:
        return list(snapshot.files)
    return prune_files(
        snapshot.files,
        predicate,
        snapshot.schema,
        snapshot.partition_columns,
        mapping_mode=snapshot.column_mapping.mode,
    )


def _source_keys(source: DataFrame, column: str) -> list[int]:
    """The source's distinct non-NULL values of ``column``, sorted (one small job)."""
    import numpy as np
    import pyarrow.compute as pc

    values = source.select(F.col(quote_identifier(column))).toArrow().column(0)
    return np.unique(pc.drop_null(values).to_numpy()).tolist()


__all__ = ["KEY_SET_ROWS", "Candidates", "prune"]
