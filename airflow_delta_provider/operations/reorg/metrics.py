"""REORG's metrics, by delta-spark's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True, kw_only=True)
class ReorgMetrics(OperationMetrics):
    """delta-spark's REORG ... APPLY (PURGE) metrics (its OPTIMIZE's), in its order.

    The file sizes are those :func:`file_sizes` gives; ``numPurgedRows`` and
    ``executionTimeMs`` are in the result only, not in the commit.
    """

    #: The metrics of the result that delta-spark's REORG does not record in its commit.
    result_only: ClassVar[tuple[str, ...]] = ("numPurgedRows", "executionTimeMs")

    num_added_files: int
    num_removed_files: int
    num_added_bytes: int
    num_removed_bytes: int
    min_file_size: int
    p25_file_size: int
    p50_file_size: int
    p75_file_size: int
    max_file_size: int
    num_deletion_vectors_removed: int
    num_purged_rows: int
    execution_time_ms: int

    def commit_metrics(self) -> dict[str, Any]:
        """What the commit records: delta-spark's REORG (its OPTIMIZE) metrics."""
        return {k: v for k, v in super().commit_metrics().items() if k not in self.result_only}


def file_sizes(sizes: list[int]) -> dict[str, int]:
    """delta-spark's sizes of the files an OPTIMIZE or REORG wrote, as :class:`ReorgMetrics`'
    keyword arguments: min, max, and the sorted sizes at n/4, n/2 and 3n/4 as its
    percentiles (0 when none)."""
    ordered = sorted(sizes)
    n = len(ordered)

    def at(i: int) -> int:
        return ordered[i] if ordered else 0

    return {
        "min_file_size": at(0),
        "p25_file_size": at(n // 4),
        "p50_file_size": at(n // 2),
        "p75_file_size": at(3 * n // 4),
        "max_file_size": at(n - 1),
    }


__all__ = ["ReorgMetrics", "file_sizes"]
