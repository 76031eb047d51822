"""UPDATE's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed
from airflow_delta_provider.operations.spec.fields import (
    option,
    pairs,
)


@dataclass(frozen=True, kw_only=True)
class UpdateSpec(OperationSpec):
    operation = "update"
    summary = "conditional UPDATE"
    renamed: ClassVar[Mapping[str, Renamed]] = {**OperationSpec.renamed, "set_exprs": ("updates", None)}

    condition: str | None = option(templated=True, renderer="sql", help="SQL predicate; all rows when absent")
    updates: tuple[tuple[str, str], ...] = pairs(
        templated=True,
        renderer="json",
        flag="--set",
        dest="set_exprs",
        metavar="COL=SQL",
        required=True,
        help="a column and the SQL of its new value",
    )

    def validate(self) -> None:
        super().validate()
        if not self.updates:
            raise InvalidArgumentError("UPDATE needs at least one SET column=expression in updates")
        for target, sql in self.updates:
            if sql is None or not str(sql).strip():
                raise InvalidArgumentError(f"SET {target}= has an empty expression")
