"""REORG's metrics, by delta-spark's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True, kw_only=True)
class RewriteMetrics(OperationMetrics):
    """What a rewrite of files added and removed, as delta-spark's OPTIMIZE (and
    REORG, which is an OPTIMIZE) names it: files, bytes, and the sizes of the
    files written (:func:`file_sizes`)."""

    num_added_files: int
    num_removed_files: int
    num_added_bytes: int
    num_removed_bytes: int
    min_file_size: int
    p25_file_size: int
    p50_file_size: int
    p75_file_size: int
    max_file_size: int


@dataclass(frozen=True, kw_only=True)
class ReorgMetrics(RewriteMetrics):
    """delta-spark's REORG ... APPLY (PURGE) metrics (its OPTIMIZE's), in its order;
    ``numPurgedRows`` and ``executionTimeMs`` are in the result only, not in the commit."""

    result_only: ClassVar[tuple[str, ...]] = ("numPurgedRows", "executionTimeMs")

    num_deletion_vectors_removed: int
    num_purged_rows: int
    execution_time_ms: int


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


__all__ = ["ReorgMetrics", "RewriteMetrics", "file_sizes"]
