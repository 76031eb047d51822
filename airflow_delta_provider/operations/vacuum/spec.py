"""VACUUM's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.delta.errors import NegativeRetentionError
from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed
from airflow_delta_provider.operations.spec.fields import (
    negated_switch,
    option,
    switch,
)

#: Kinds of VACUUM: ``full`` lists the table folder and also deletes files the log never
#: named; ``lite`` finds the removable files from the log alone (delta-spark's VACUUM LITE).
VACUUM_MODES = ("full", "lite")
FULL_VACUUM, LITE_VACUUM = VACUUM_MODES


@dataclass(frozen=True, kw_only=True)
class VacuumSpec(OperationSpec):
    """With spark-submit, executors delete the files; with no Spark, this process does."""

    operation = "vacuum"
    summary = "delete unreferenced files"
    renamed: ClassVar[Mapping[str, Renamed]] = {
        **OperationSpec.renamed,
        "enforce_retention": ("retention_check", None),
        "lite": ("mode", lambda lite: LITE_VACUUM if lite else FULL_VACUUM),
    }
    runs_without_spark = True

    retention_hours: float | None = option(templated=True, parse=float)
    dry_run: bool = switch()
    retention_check: bool = negated_switch(
        flag="--no-retention-check", help="allow a retention below delta.deletedFileRetentionDuration"
    )
    mode: str = option(
        FULL_VACUUM,
        choices=VACUUM_MODES,
        aliases=(("--lite", LITE_VACUUM),),
        help="full (default) lists the table folder; lite (--lite) finds the removable files from the log, "
        "listing no data folder (VACUUM LITE)",
    )

    def validate(self) -> None:
        super().validate()
        if self.retention_hours is not None and self.retention_hours < 0:
            raise NegativeRetentionError(f"retention must not be negative, got {self.retention_hours} hours")
