"""SHALLOW CLONE: a new table whose log names another table's data files.

This needs no Spark: the core reads the source's log and commits the
target's (:mod:`airflow_delta_provider.operations.clone.plan`); no data file
is read, copied or written. The same ``storage_options`` reach both tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.clone.plan import OPERATION, clone_table
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run(spark: SparkSession | None, spec: CloneSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """SHALLOW CLONE the spec's ``source_path`` into its table. ``spark`` may be None."""
    del spark
    result, plan = clone_table(
        DeltaTable(spec.source_path, storage_options),
        DeltaTable(spec.table_path, storage_options),
        version=spec.version,
        timestamp=spec.timestamp,
        replace=spec.replace,
        properties=dict(spec.table_properties),
        token=spec.token,
    )
    return CommandResult(spec.table_path, OPERATION, result.version, plan.metrics())


__all__ = ["run"]
