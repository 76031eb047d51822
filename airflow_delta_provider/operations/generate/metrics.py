"""GENERATE's metrics: the manifests written and deleted."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.result import OperationMetrics


@dataclass(frozen=True)
class GenerateMetrics(OperationMetrics):
    """One manifest per partition written; those of partitions that have no file any more deleted."""

    num_manifests_written: int
    num_manifests_deleted: int


__all__ = ["GenerateMetrics"]
