"""REGISTER: check that the location holds a Delta table, for its catalog entry.

The entry itself is written where every operation on a catalog name writes
it, after the run (:meth:`airflow_delta_provider.delta.catalog.binding.CatalogTable.sync`):
by the time this runs, the name is bound to the location. Here the core
only reads the table, so a location without one is refused before any entry
is made. No commit is made; the result's ``version`` is the registered one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.register.metrics import RegisterMetrics
from airflow_delta_provider.operations.register.spec import RegisterSpec
from airflow_delta_provider.operations.result import CommandResult

OPERATION = "REGISTER"


def run(spark: Any, spec: RegisterSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Read the latest snapshot at the spec's (bound) location. ``spark`` is unused."""
    del spark
    snapshot = DeltaTable(spec.table_path, storage_options).snapshot()  # TableNotFoundError: nothing to register
    metrics = RegisterMetrics(num_files=snapshot.num_files, num_columns=len(snapshot.schema.get("fields", ())))
    return CommandResult(spec.table_path, OPERATION, snapshot.version, metrics)


__all__ = ["OPERATION", "run"]
