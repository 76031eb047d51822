"""RESTORE's metrics, by delta-spark's names."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class RestoreMetrics(OperationMetrics):
    """The files re-added and removed, and the table after the RESTORE."""

    num_restored_files: int
    restored_files_size: int
    num_removed_files: int
    removed_files_size: int
    num_of_files_after_restore: int
    table_size_after_restore: int


__all__ = ["RestoreMetrics"]
