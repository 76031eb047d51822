"""RESTORE: the table as it was at an earlier version or timestamp, as a new commit.

This needs no Spark: the core plans and commits it
(:mod:`airflow_delta_provider.operations.restore.plan`); no data file is read or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.restore.plan import OPERATION, restore_table
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run(
    spark: SparkSession | None, spec: RestoreSpec, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """RESTORE the spec's table to its ``version`` or ``timestamp``. ``spark`` may be None."""
    del spark
    table = DeltaTable(spec.table_path, storage_options)
    result, plan = restore_table(table, spec.version, spec.timestamp, spec.token)
    return CommandResult(spec.table_path, OPERATION, result.version, plan.metrics())


__all__ = ["run"]
