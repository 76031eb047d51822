"""CHECKPOINT's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    switch,
)


@dataclass(frozen=True, kw_only=True)
class CheckpointSpec(OperationSpec):
    operation = "checkpoint"
    summary = "checkpoint the latest version"
    runs_without_spark = True

    cleanup_logs: bool = switch()

    def needs_spark(self) -> bool:
        return False
