"""REGISTER's metrics: what the registered table holds."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class RegisterMetrics(OperationMetrics):
    """The table's live files and columns at the version registered."""

    num_files: int
    num_columns: int


__all__ = ["RegisterMetrics"]
