"""The MERGE's commit: removes, adds, change data and the evolved schema as one version, with delta-spark's metrics."""

from __future__ import annotations

from dataclasses import replace

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table_features import column_mapping
from airflow_delta_provider.operations.dml.copy_on_write import elapsed_ms, now_ms
from airflow_delta_provider.operations.merge.prepare import OPERATION, MergePlan
from airflow_delta_provider.operations.merge.rewrite import Rewritten, clause_counts
from airflow_delta_provider.operations.result import CommandResult


def merge_metrics(plan: MergePlan, rewritten: Rewritten) -> dict[str, int]:
    """delta-spark's MERGE metrics (``executionTimeMs`` up to now)."""
    r = rewritten
    c = clause_counts(plan.rows, r.counts)
    updated = c["matched_updated"] + c["source_updated"]
    deleted = c["matched_deleted"] + c["source_deleted"]
    return {
        "numSourceRows": plan.candidates.source_rows,
        "numTargetRowsInserted": r.inserted,
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": c["matched_updated"],
        "numTargetRowsNotMatchedBySourceUpdated": c["source_updated"],
        "numTargetRowsDeleted": deleted,
        "numTargetRowsMatchedDeleted": c["matched_deleted"],
        "numTargetRowsNotMatchedBySourceDeleted": c["source_deleted"],
        "numTargetRowsCopied": r.rows_copied,
        "numOutputRows": sum(f.num_records or 0 for f in r.added),
        "numTargetFilesAdded": len(r.added),
        "numTargetFilesRemoved": len(r.removed),
        "numTargetChangeFilesAdded": 0,
        "numTargetBytesAdded": sum(f.size for f in r.added),
        "numTargetBytesRemoved": sum(f.size for f in r.removed),
        # Copy-on-write: no vector is written; a removed file may carry one.
        "numTargetDeletionVectorsAdded": 0,
        "numTargetDeletionVectorsRemoved": sum(f.deletion_vector is not None for f in r.removed),
        "numTargetDeletionVectorsUpdated": 0,
        "materializeSourceTimeMs": plan.materialize_ms,
        "executionTimeMs": elapsed_ms(plan.started),
        "scanTimeMs": r.scan_ms,
        "rewriteTimeMs": r.rewrite_ms,
    }


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
    committed = plan.txn.commit(metrics=metrics, token=plan.token)
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
