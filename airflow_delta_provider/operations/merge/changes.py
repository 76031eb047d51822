"""The MERGE's change data, on a table recording its changes (``delta.enableChangeDataFeed``)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.operations.merge.clauses import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED_BY_SOURCE,
    UPDATE,
)
from airflow_delta_provider.operations.merge.files import Written, write_changes
from airflow_delta_provider.operations.merge.frames import delete_condition, inserts
from airflow_delta_provider.operations.merge.prepare import MergePlan
from airflow_delta_provider.spark.write.files import WrittenFiles


def record_changes(
    plan: MergePlan,
    rewritten: Sequence[AddFile],
    with_matches: Sequence[AddFile],
    deleting_duplicates: bool,
    matched_keys: DataFrame | None,
    ledger: WrittenFiles,
) -> Written:
    """Write the MERGE's changed rows as change data, as delta-spark
    records them: each updated target row's pre- and post-image, each
    deleted one, and each inserted source row. A second pass over the
    rewritten files (only insert-only MERGEs, which rewrite nothing, need
    none: their adds are their inserts)."""
    from airflow_delta_provider.delta.table_features.change_data_feed import DELETE as DELETED
    from airflow_delta_provider.delta.table_features.change_data_feed import INSERT as INSERTED
    from airflow_delta_provider.delta.table_features.change_data_feed import (
        UPDATE_POSTIMAGE,
        UPDATE_PREIMAGE,
    )
    from airflow_delta_provider.spark.write.change_data import tagged, with_change_type

    rows = plan.rows
    target, source = rows.target(plan.target.scan(rewritten)), rows.source(plan.source)
    action = F.col(rows.action_column)
    updates, deletes = rows.indexes(action=UPDATE), rows.indexes(action=DELETE)
    fields = rows.struct.fields
    before = rows.target_columns_out()[: len(fields)]  # without row tracking columns or derive flags
    changes = None
    if deleting_duplicates:  # every matched clause deletes (or none is there): one delete per row
        deleting = delete_condition(plan)
        if deleting is not None:
            deleted = rows.join(target, source, "left_semi", on=deleting).alias(plan.target_alias)
            changes = with_change_type(deleted.select(*before), DELETED)
        unmatched = rows.join(target, source, "left_anti").alias(plan.target_alias)
        joined = unmatched.withColumn(rows.action_column, rows.cascade(NOT_MATCHED_BY_SOURCE))
        kinds: tuple[str, ...] = (NOT_MATCHED_BY_SOURCE,)
    else:
        joined = rows.join(target, source, "left")
        joined = joined.withColumn(rows.action_column, rows.action(unmatched_sources=False))
        kinds = (MATCHED, NOT_MATCHED_BY_SOURCE)
    after = [c.cast(f.dataType).alias(f.name) for c, f in zip(rows.postimage_columns(action, kinds=kinds), fields)]
    image = F.when(
        action.isin(updates), F.array(tagged(before, UPDATE_PREIMAGE), tagged(after, UPDATE_POSTIMAGE))
    ).otherwise(F.array(tagged(before, DELETED)))
    changed = joined.filter(action.isin(updates + deletes))
    images = changed.select(F.explode(image).alias(rows.action_column)).select(f"{rows.action_column}.*")
    changes = images if changes is None else changes.unionByName(images)
    if plan.has(action=INSERT):
        inserted = rows.derive(inserts(plan, with_matches, matched_keys))
        if plan.target.tracking is not None:
            inserted = inserted.drop(*plan.target.tracking.names)
        changes = changes.unionByName(with_change_type(inserted, INSERTED))
    return write_changes(plan.target, changes, plan.schema, plan.metadata, ledger)


__all__ = ["record_changes"]
