"""CONVERT's metrics, by delta-spark's names."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class ConvertMetrics(OperationMetrics):
    """The Parquet files the new table's version 0 adds."""

    num_converted_files: int


__all__ = ["ConvertMetrics"]
