"""OPTIMIZE's metrics, by delta-spark's names (``OptimizeMetrics``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.operations.result import OperationMetrics

#: Metrics of the result that delta-spark's OPTIMIZE does not record in its commit.
RESULT_ONLY_METRICS = ("totalConsideredFiles", "totalFilesSkipped", "executionTimeMs")


@dataclass(frozen=True)
class OptimizeMetrics(OperationMetrics):
    """What an OPTIMIZE rewrote: the files and bytes added and removed, the sizes of
    the files written (delta-spark's min, percentiles and max), the candidate files
    considered and skipped, and the time it took."""

    num_added_files: int
    num_removed_files: int
    num_added_bytes: int
    num_removed_bytes: int
    min_file_size: int
    p25_file_size: int
    p50_file_size: int
    p75_file_size: int
    max_file_size: int
    total_considered_files: int
    total_files_skipped: int
    num_deletion_vectors_removed: int
    execution_time_ms: int

    def commit_metrics(self) -> dict[str, Any]:
        """delta-spark's OPTIMIZE set: no timing and no file-skipping counts (those stay in the result)."""
        return {k: v for k, v in super().commit_metrics().items() if k not in RESULT_ONLY_METRICS}


__all__ = ["RESULT_ONLY_METRICS", "OptimizeMetrics"]
