"""The MERGE's commit: removes, adds, change data and the evolved schema as one version, with delta-spark's metrics."""

from __future__ import annotations

from dataclasses import replace

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table_features import column_mapping
from airflow_delta_provider.operations.dml.copy_on_write import elapsed_ms, now_ms
from airflow_delta_provider.operations.merge.metrics import MergeMetrics
from airflow_delta_provider.operations.merge.prepare import OPERATION, MergePlan
from airflow_delta_provider.operations.merge.rewrite import Rewritten, clause_counts
from airflow_delta_provider.operations.result import CommandResult


def merge_metrics(plan: MergePlan, rewritten: Rewritten) -> MergeMetrics:
    """delta-spark's MERGE metrics (``executionTimeMs`` up to now)."""
    r = rewritten
    c = clause_counts(plan.rows, r.counts)
    return MergeMetrics(
        num_source_rows=plan.candidates.source_rows,
        num_target_rows_inserted=r.inserted,
        num_target_rows_updated=c["matched_updated"] + c["source_updated"],
        num_target_rows_matched_updated=c["matched_updated"],
        num_target_rows_not_matched_by_source_updated=c["source_updated"],
        num_target_rows_deleted=c["matched_deleted"] + c["source_deleted"],
        num_target_rows_matched_deleted=c["matched_deleted"],
        num_target_rows_not_matched_by_source_deleted=c["source_deleted"],
        num_target_rows_copied=r.rows_copied,
        num_output_rows=sum(f.num_records or 0 for f in r.added),
        num_target_files_added=len(r.added),
        num_target_files_removed=len(r.removed),
        num_target_change_files_added=0,
        num_target_bytes_added=sum(f.size for f in r.added),
        num_target_bytes_removed=sum(f.size for f in r.removed),
        num_target_deletion_vectors_added=0,
        num_target_deletion_vectors_removed=sum(f.deletion_vector is not None for f in r.removed),
        num_target_deletion_vectors_updated=0,
        materialize_source_time_ms=plan.materialize_ms,
        execution_time_ms=elapsed_ms(plan.started),
        scan_time_ms=r.scan_ms,
        rewrite_time_ms=r.rewrite_ms,
    )


def commit(plan: MergePlan, rewritten: Rewritten) -> CommandResult:
    """Commit the rewrite through the plan's transaction (which checks
    conflicts and retries); with nothing written or removed, commit nothing
    (version None)."""
    r = rewritten
    if not r.removed and not r.added:
        return CommandResult(plan.table_uri, OPERATION, None, merge_metrics(plan, r))
    ts = now_ms()
    metadata = plan.evolved
    marked = _with_high_water_marks(plan, r.added)
    if marked is not None:
        from airflow_delta_provider.delta.table_features import (
            identity_columns as identity,
        )

        if metadata is None:  # a change of the marks alone is tagged as delta-spark tags it
            plan.txn.tag(identity.COMMIT_TAG, "true")
        metadata = marked
    if metadata is not None:
        plan.txn.update_metadata(metadata)
    plan.txn.add_all([*r.added, *(f.remove(ts) for f in r.removed), *r.changes])
    metrics = merge_metrics(plan, r)
    committed = plan.txn.commit(metrics=metrics.commit_metrics(), token=plan.token)
    return CommandResult(plan.table_uri, OPERATION, committed.version, metrics)


def _with_high_water_marks(plan: MergePlan, added: tuple[AddFile, ...]) -> Metadata | None:
    """The metadata with the high-water marks of the identity columns
    inserts generated values for moved past every value written
    (delta-spark's identity stats tracker); None when no mark moves."""
    from airflow_delta_provider.delta.table_features import identity_columns as identity
    from airflow_delta_provider.spark.write.generated_columns import written_extreme

    generated = plan.rows.generates_identity_values
    if not generated or not added:
        return None
    md = plan.metadata
    mapping = column_mapping.ColumnMapping.of(md.schema_json, md.configuration)
    partitions = {c.lower() for c in md.partition_columns}
    marks = {}
    for ident in generated:
        key = mapping.physical_column(ident.column) if mapping.enabled else ident.column
        extreme = written_extreme(
            plan.target.table.storage, list(added), key, ident.column.lower() in partitions, ident.step > 0
        )
        mark = ident.new_high_water_mark([] if extreme is None else [extreme])
        if mark is not None and mark != ident.high_water_mark:
            marks[ident.column] = mark
    if not marks:
        return None
    schema = identity.with_high_water_marks(md.schema_json, marks)
    return replace(md, schema_string=schema_string(schema))


__all__ = ["commit", "merge_metrics"]
