"""What UPDATE and DELETE both report: delta-spark's metrics of a copy-on-write
(or merge-on-read) rewrite."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_delta_provider.operations.result import METRIC_NAME, OperationMetrics


@dataclass(frozen=True, kw_only=True)
class DmlMetrics(OperationMetrics):
    """delta-spark's metrics of an UPDATE or DELETE, in its order.

    ``num_changed_rows`` comes first: each command re-declares it with its own
    name (``numUpdatedRows``, ``numDeletedRows``), which keeps its place. A
    file re-added under a new deletion vector is neither an added nor a
    removed file; vectors count as in delta-spark: adds and removes carrying
    one, and paths carrying one on both sides.
    """

    num_changed_rows: int = field(metadata={METRIC_NAME: "numChangedRows"})
    num_added_files: int
    num_removed_files: int
    num_copied_rows: int
    num_added_change_files: int
    num_added_bytes: int
    num_removed_bytes: int
    num_deletion_vectors_added: int
    num_deletion_vectors_removed: int
    num_deletion_vectors_updated: int
    execution_time_ms: int
    scan_time_ms: int
    rewrite_time_ms: int


__all__ = ["DmlMetrics"]
