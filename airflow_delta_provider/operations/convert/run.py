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
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run(
    spark: SparkSession | None, spec: ConvertSpec, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """CONVERT the spec's Parquet folder to Delta. ``spark`` may be None."""
    del spark
    table = DeltaTable(spec.table_path, storage_options)
    result, plan = convert_to_delta(table, spec.partition_by, dict(spec.table_properties), spec.token)
    return CommandResult(spec.table_path, OPERATION, result.version, plan.metrics())


__all__ = ["run"]
