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
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_clone(
    spark: SparkSession | None,
    table: str,
    source: str,
    version: int | None = None,
    timestamp: str | None = None,
    replace: bool = False,
    table_properties: Mapping[str, str] | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    """SHALLOW CLONE ``source`` into ``table``. ``spark`` may be None."""
    del spark
    result, plan = clone_table(
        DeltaTable(source, storage_options),
        DeltaTable(table, storage_options),
        version,
        timestamp,
        replace,
        table_properties,
        token,
    )
    return CommandResult(table, OPERATION, result.version, plan.metrics())


__all__ = ["run_clone"]
