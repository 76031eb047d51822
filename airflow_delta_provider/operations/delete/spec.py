"""DELETE's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
)


@dataclass(frozen=True, kw_only=True)
class DeleteSpec(OperationSpec):
    operation = "delete"
    summary = "conditional DELETE"

    condition: str | None = option(templated=True, renderer="sql", help="SQL predicate; all rows when absent")
