"""UPDATE's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
    pairs,
)


@dataclass(frozen=True, kw_only=True)
class UpdateSpec(OperationSpec):
    operation = "update"
    summary = "conditional UPDATE"

    condition: str | None = option(help="SQL predicate; all rows when absent")
    updates: tuple[tuple[str, str], ...] = pairs(
        flag="--set", dest="set_exprs", metavar="COL=SQL", required=True, help="a column and the SQL of its new value"
    )
