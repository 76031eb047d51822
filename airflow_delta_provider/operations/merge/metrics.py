"""MERGE's metrics: delta-spark's ``MergeIntoCommand`` ``operationMetrics``."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class MergeMetrics(OperationMetrics):
    """What a MERGE read, changed and wrote, and how long its steps took."""

    num_source_rows: int
    num_target_rows_inserted: int
    num_target_rows_updated: int
    num_target_rows_matched_updated: int
    num_target_rows_not_matched_by_source_updated: int
    num_target_rows_deleted: int
    num_target_rows_matched_deleted: int
    num_target_rows_not_matched_by_source_deleted: int
    num_target_rows_copied: int
    num_output_rows: int
    num_target_files_added: int
    num_target_files_removed: int
    num_target_change_files_added: int
    num_target_bytes_added: int
    num_target_bytes_removed: int
    #: Copy-on-write: no vector is written; a removed file may carry one.
    num_target_deletion_vectors_added: int
    num_target_deletion_vectors_removed: int
    num_target_deletion_vectors_updated: int
    materialize_source_time_ms: int
    execution_time_ms: int
    scan_time_ms: int
    rewrite_time_ms: int


__all__ = ["MergeMetrics"]
