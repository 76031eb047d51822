"""CONVERT TO DELTA: a folder of Parquet files becomes a Delta table in place.

This needs no Spark: the core lists the files, reads their footers and commits
version 0 (:mod:`airflow_delta_provider.operations.convert.plan`); no data
file is copied, moved or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.convert.plan import OPERATION, convert_to_delta
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_convert(
    spark: SparkSession | None,
    table: str,
    partition_by: str | None = None,
    table_properties: Mapping[str, str] | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    """CONVERT the Parquet folder ``table`` to Delta. ``spark`` may be None."""
    del spark
    result, plan = convert_to_delta(DeltaTable(table, storage_options), partition_by, table_properties, token)
    return CommandResult(table, OPERATION, result.version, plan.metrics())


__all__ = ["run_convert"]
