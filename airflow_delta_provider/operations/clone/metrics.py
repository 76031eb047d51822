"""CLONE's metrics, by delta-spark's names (a shallow clone copies no file)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class CloneMetrics(OperationMetrics):
    """The source's files, and the target's files the clone removed (with ``replace``)."""

    source_table_size: int
    source_num_of_files: int
    num_removed_files: int
    num_copied_files: int
    removed_files_size: int
    copied_files_size: int


__all__ = ["CloneMetrics"]
