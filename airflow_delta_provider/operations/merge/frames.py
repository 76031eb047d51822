"""The frames a MERGE writes: the rewritten files' rows after the clauses, and the inserts.

Each function builds a Spark frame from a :class:`~.plan.MergePlan` and the
files it names; none runs a job.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.operations.merge.clauses import (
    INSERT,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
)
from airflow_delta_provider.operations.merge.prepare import MergePlan


def delete_condition(plan: MergePlan) -> str | None:
    """When every matched clause deletes: the condition under which a match
    deletes its target row (the join condition and any clause's condition);
    None without matched clauses (matched rows stay as they are)."""
    conditions = [c.condition for c in plan.clauses if c.when == MATCHED]
    if not conditions:
        return None
    if None in conditions:
        return plan.on
    return f"({plan.on}) AND (" + " OR ".join(f"({c})" for c in conditions) + ")"


def inserts(plan: MergePlan, files: Sequence[AddFile], matched_keys: DataFrame | None) -> DataFrame:
    """The source rows that match no row of ``files``, each as the first
    ``not_matched`` clause inserts it.

    When the join condition is key equalities (and target-only
    conditions), a source row is unmatched exactly when its keys are not
    among the keys of the matched pairs: the source is anti-joined to
    that small set (``matched_keys``, kept when the touched files were
    found, or found by an inner join), so the target's rows are never
    shuffled. Otherwise the source is anti-joined to the target's rows."""
    rows = plan.rows
    source = rows.source(plan.source)
    pairs = plan.insert_key_pairs
    if files and pairs:
        keys = matched_keys
        if keys is None:
            keys = rows.join(rows.target(plan.target.scan(files)), source, "inner").select(
                *[rows.source_value(s).alias(f"s{i}") for i, (_t, s) in enumerate(pairs)]
            )
        keys = F.broadcast(keys.distinct())
        condition = [rows.source_value(s) == keys[f"s{i}"] for i, (_t, s) in enumerate(pairs)]
        source = source.join(keys, condition, "left_anti").alias(plan.source_alias)
    elif files:
        target = rows.target(plan.target.scan(files))
        source = source.join(target, F.expr(plan.on), "left_anti").alias(plan.source_alias)
    action = F.col(rows.action_column)
    source = source.withColumn(rows.action_column, rows.cascade(NOT_MATCHED))
    return source.filter(~rows.drops(action)).select(*rows.output_columns(action, kinds=(NOT_MATCHED,)))


def rewrite_matched(plan: MergePlan, rewritten: Sequence[AddFile]) -> DataFrame | None:
    """The rows of the rewritten files after the clauses: a left join to
    the source (broadcast when the source is small), so the target's rows
    are not shuffled. None without files to rewrite."""
    if not rewritten:
        return None
    rows = plan.rows
    joined = rows.join(rows.target(plan.target.copy_rows(rewritten)), rows.source(plan.source), "left")
    action = F.col(rows.action_column)
    joined = joined.withColumn(rows.action_column, rows.action(unmatched_sources=False))
    kinds = (MATCHED, NOT_MATCHED_BY_SOURCE)
    return joined.filter(~rows.drops(action)).select(*rows.output_columns(action, kinds=kinds))


def rewrite_with_inserts(plan: MergePlan, rewritten: Sequence[AddFile], spectators: Sequence[AddFile]) -> DataFrame:
    """The rows of the rewritten files after the clauses, and the inserts,
    from one full outer join, for a join condition that is more than
    key equalities (:func:`inserts` needs those). The ``spectators``
    (files with matched rows no clause changes) join too, so that their
    matches are not taken for unmatched source rows; their rows are not
    written."""
    rows = plan.rows
    source = rows.source(plan.source)
    target = _target_rows(plan, rewritten, spectators)
    if target is None:
        return inserts(plan, [], None)
    joined = rows.join(target, source, "full")
    action = F.col(rows.action_column)
    joined = joined.withColumn(rows.action_column, rows.action())
    written = F.col(rows.target_marker).isNull() | F.col(rows.target_marker)
    return joined.filter(~rows.drops(action) & written).select(*rows.output_columns(action))


def rewrite_deleting(
    plan: MergePlan, rewritten: Sequence[AddFile], matched: Sequence[AddFile], matched_keys: DataFrame | None
) -> DataFrame:
    """The rewrite when target rows are matched by several source rows
    and every matched clause deletes: a row goes when any of its matches
    meets a delete condition (an anti join), so that no row is written
    twice."""
    rows = plan.rows
    source = rows.source(plan.source)
    deleting = delete_condition(plan)
    survivors = rows.target(plan.target.copy_rows(rewritten))
    if deleting is not None:  # else matched rows stay as they are
        survivors = rows.join(survivors, source, "left_anti", on=deleting).alias(plan.target_alias)
    out = survivors.select(*rows.target_columns_out())
    if plan.has(when=NOT_MATCHED_BY_SOURCE):
        kept = rows.join(survivors, source, "left_semi").alias(plan.target_alias)
        unmatched = rows.join(survivors, source, "left_anti").alias(plan.target_alias)
        action = F.col(rows.action_column)
        unmatched = unmatched.withColumn(rows.action_column, rows.cascade(NOT_MATCHED_BY_SOURCE))
        changed = unmatched.filter(~rows.drops(action)).select(
            *rows.output_columns(action, kinds=(NOT_MATCHED_BY_SOURCE,))
        )
        out = kept.select(*rows.target_columns_out()).unionByName(changed)
    if plan.has(action=INSERT):
        out = out.unionByName(inserts(plan, matched, matched_keys))
    return out


def _target_rows(plan: MergePlan, rewritten: Sequence[AddFile], spectators: Sequence[AddFile]) -> DataFrame | None:
    """The rows of the files to rewrite (marker true) and of the files
    only joined (marker false), under the target alias; None for none."""
    rows = plan.rows
    frames = []
    for files, marker in ((rewritten, True), (spectators, False)):
        if files:
            frames.append(rows.target(plan.target.copy_rows(files)).withColumn(rows.target_marker, F.lit(marker)))
    if not frames:
        return None
    out = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    return out.alias(plan.target_alias)


__all__ = ["delete_condition", "inserts", "rewrite_deleting", "rewrite_matched", "rewrite_with_inserts"]
