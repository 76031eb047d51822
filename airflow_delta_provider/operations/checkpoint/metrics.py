"""CHECKPOINT's metrics: what the checkpoint holds, and the log files cleaned up."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class CheckpointMetrics(OperationMetrics):
    """The live files the checkpoint holds and their size; the expired log files
    deleted, only when the logs were cleaned up (left out otherwise)."""

    num_add_files: int
    size_in_bytes: int
    num_deleted_log_files: int | None = None


__all__ = ["CheckpointMetrics"]
