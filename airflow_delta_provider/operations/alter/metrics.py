"""ALTER's metrics: none (delta-spark records no ``operationMetrics`` for a metadata change)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class AlterMetrics(OperationMetrics):
    """A schema or property change commits metadata only: it has no metrics."""


__all__ = ["AlterMetrics"]
