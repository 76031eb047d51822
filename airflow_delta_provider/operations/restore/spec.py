"""RESTORE's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
)


@dataclass(frozen=True, kw_only=True)
class RestoreSpec(OperationSpec):
    operation = "restore"
    summary = "RESTORE the table to an earlier version"
    runs_without_spark = True
    exactly_one_of = ("version", "timestamp")

    version: int | None = option(templated=True, parse=int, help="the version to restore")
    timestamp: str | None = option(
        templated=True, help="restore the newest version committed at or before this time (ISO 8601, UTC if no zone)"
    )

    def validate(self) -> None:
        super().validate()
        if self.version is not None and self.version < 0:
            raise InvalidArgumentError(f"cannot restore to version {self.version}: versions start at 0")

    def needs_spark(self) -> bool:
        return False
