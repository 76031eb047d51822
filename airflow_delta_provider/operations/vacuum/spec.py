"""VACUUM's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.spec.base import OperationSpec
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
    runs_without_spark = True

    retention_hours: float | None = option(parse=float)
    dry_run: bool = switch()
    enforce_retention: bool = negated_switch(flag="--no-retention-check")
    lite: bool = switch(help="VACUUM LITE: find the removable files from the log, list no data folder")
