"""CHANGES's metrics: what it read and wrote (it commits nothing)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True, kw_only=True)
class ChangesMetrics(OperationMetrics):
    """The version range read, the rows written (per change type in ``changes``), and where."""

    start_version: int
    end_version: int
    num_output_rows: int
    num_change_files: int
    changes: dict[str, int]
    output: str
    execution_time_ms: int


__all__ = ["ChangesMetrics"]
