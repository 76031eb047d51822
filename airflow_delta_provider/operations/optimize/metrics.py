"""OPTIMIZE's metrics, by delta-spark's names (``OptimizeMetrics``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.operations.reorg.metrics import RewriteMetrics


@dataclass(frozen=True, kw_only=True)
class OptimizeMetrics(RewriteMetrics):
    """What an OPTIMIZE rewrote (:class:`RewriteMetrics`), the candidate files
    considered and skipped, and the time it took; delta-spark's commit records
    neither the timing nor the file-skipping counts, which stay in the result."""

    result_only: ClassVar[tuple[str, ...]] = ("totalConsideredFiles", "totalFilesSkipped", "executionTimeMs")

    total_considered_files: int
    total_files_skipped: int
    num_deletion_vectors_removed: int
    execution_time_ms: int


__all__ = ["OptimizeMetrics"]
