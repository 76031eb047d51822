"""DELETE's metrics, by delta-spark's names."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_delta_provider.operations.dml.metrics import DmlMetrics
from airflow_delta_provider.operations.result import METRIC_NAME


@dataclass(frozen=True, kw_only=True)
class DeleteMetrics(DmlMetrics):
    """delta-spark's DELETE metrics: ``numDeletedRows``, then :class:`DmlMetrics`'."""

    num_changed_rows: int = field(metadata={METRIC_NAME: "numDeletedRows"})


__all__ = ["DeleteMetrics"]
