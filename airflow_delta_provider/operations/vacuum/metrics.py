"""VACUUM's metrics, by delta-spark's names: one set for each of its two commits."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class VacuumStartMetrics(OperationMetrics):
    """``VACUUM START``'s: what will be deleted (a dry run's result)."""

    num_files_to_delete: int
    size_of_data_to_delete: int


@dataclass(frozen=True)
class VacuumEndMetrics(OperationMetrics):
    """``VACUUM END``'s: what was deleted, and the folders searched (as delta-spark
    counts them, not those deleted)."""

    num_deleted_files: int
    num_vacuumed_directories: int


__all__ = ["VacuumEndMetrics", "VacuumStartMetrics"]
