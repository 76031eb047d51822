"""The MERGE's touched files: the candidates joined to the source, counted per file and clause.

A target row matched by more than one source row is refused here, unless
every matched clause deletes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.errors import MultipleSourceMatchesError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.operations.dml.copy_on_write import elapsed_ms
from airflow_delta_provider.operations.merge.clauses import (
    DELETE,
    NOT_MATCHED_BY_SOURCE,
    UPDATE,
)
from airflow_delta_provider.operations.merge.prepare import MergePlan

#: How many key columns a multiple-match error shows.
_KEYS_SHOWN = 5


@dataclass(frozen=True)
class Touched:
    """What the join of the candidates to the source found."""

    #: The paths of the files holding a row a clause updates or deletes.
    touched: frozenset[str] = frozenset()
    #: The paths of the files holding a matched row.
    with_matches: frozenset[str] = frozenset()
    #: Target rows per index of the clause that acts on them (COPY: none acts).
    counts: Mapping[int, int] = field(default_factory=dict)
    #: A target row is matched by several source rows (every matched clause deletes).
    deleting_duplicates: bool = False
    #: The source keys of the matched pairs, kept for the inserts of an equi-join; else None.
    matched_keys: DataFrame | None = None
    scan_ms: int = 0


def find_touched_files(plan: MergePlan, keep: Callable[[DataFrame], DataFrame]) -> Touched:
    """One job over the candidates joined to the source (inner, or left
    with ``not_matched_by_source`` clauses; Spark broadcasts the source
    when it is under ``spark.sql.autoBroadcastJoinThreshold``): per file
    and clause, the target rows each clause acts on. An insert-only MERGE,
    or one without candidates, touches nothing and runs no job.

    Matched rows are grouped by their row (file key, row index): a row
    matched twice is refused unless every matched clause deletes (then
    the rewrite deletes the row when any match meets a delete condition).
    Unmatched rows are counted by file and action. For an equi-join that
    inserts, the matched pairs (their keys and actions only) are kept
    (``keep``) for the inserts."""
    from airflow_delta_provider.spark.read.file_reads import match_frame

    if plan.insert_only or not plan.candidates.files:
        return Touched()
    rows, target = plan.rows, plan.target
    start = time.monotonic()
    frame, key, row, by_key = match_frame(
        target.spark, target.snapshot, list(plan.candidates.files), None, target.io, with_data=True, uri_keys=True
    )
    nmbs = plan.has(when=NOT_MATCHED_BY_SOURCE)
    joined = rows.join(rows.target(frame), rows.source(plan.source), "left" if nmbs else "inner")
    matched = rows.is_matched
    key_pairs = plan.insert_key_pairs
    keys = [f"s{i}" for i in range(len(key_pairs))]
    pairs = joined.select(
        F.col(quote_identifier(key)).alias("k"),
        F.when(matched, F.col(quote_identifier(row))).alias("r"),
        rows.action(unmatched_sources=False).alias("a"),
        matched.alias("m"),
        *[rows.source_value(s).alias(k) for k, (_t, s) in zip(keys, key_pairs)],
    )
    matched_keys = None
    if keys and not nmbs:
        pairs = keep(pairs)  # small: matched pairs only
        matched_keys = pairs.select(*keys)
    per_row = pairs.groupBy("k", "r", F.when(~F.col("m"), F.col("a")).alias("a0")).agg(
        F.count(F.lit(1)).alias("n"), F.max("a").alias("a")
    )
    per_file = per_row.groupBy("k", "a").agg(
        F.sum(F.when(F.col("r").isNull(), F.col("n")).otherwise(F.lit(1))).alias("n"),
        F.max(F.when(F.col("r").isNotNull(), F.col("n"))).alias("most"),
    )
    found = per_file.collect()
    scan_ms = elapsed_ms(start)

    counts: Counter[int] = Counter()
    touched: set[str] = set()
    with_matches: set[str] = set()
    changing = set(rows.indexes(action=UPDATE)) | set(rows.indexes(action=DELETE))
    duplicated = False
    for r in found:
        path = by_key[r["k"]]
        counts[r["a"]] += int(r["n"])
        if r["a"] in changing:
            touched.add(path)
        if r["most"] is not None:
            with_matches.add(path)
            duplicated = duplicated or r["most"] > 1
    if duplicated and not plan.only_deletes_match:
        _raise_multiple_matches(plan, joined, key, row)
    return Touched(
        touched=frozenset(touched),
        with_matches=frozenset(with_matches),
        counts=dict(counts),
        deleting_duplicates=duplicated,
        matched_keys=matched_keys,
        scan_ms=scan_ms,
    )


def _raise_multiple_matches(plan: MergePlan, joined: DataFrame, key: str, row: str) -> None:
    """Name one target row (by the target columns of the join) matched by more than one source row."""
    rows = plan.rows
    shown = list(plan.facts.target_columns[:_KEYS_SHOWN])
    example = (
        joined.filter(rows.is_matched)
        .groupBy(F.col(quote_identifier(key)), F.col(quote_identifier(row)))
        .agg(F.count(F.lit(1)).alias("_n"), *[F.first(rows.target_value(c)).alias(c) for c in shown])
        .filter(F.col("_n") > 1)
        .limit(1)
        .collect()
    )
    described = ", ".join(f"{c}={example[0][c]!r}" for c in shown) if example and shown else "key not shown"
    count = example[0]["_n"] if example else "several"
    raise MultipleSourceMatchesError(
        f"MERGE into {plan.table_uri}: the target row ({described}) is matched by {count} source rows, "
        "and a target row may be matched by one source row only (unless every matched clause deletes): "
        "deduplicate the source on the join keys"
    )


__all__ = ["Touched", "find_touched_files"]
