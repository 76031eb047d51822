"""Which pre-flight check runs before each operation (:mod:`..preflight`).

``preflight(spec, storage_options)`` is what the hook runs before any
spark-submit or Spark Connect call, and the Spark CLI before it opens a
session. An operation without a check of its own needs its table to exist;
those that create one (APPEND, and CONVERT and CLONE, which need no Spark and
check their target themselves) check what they can. Nothing here imports pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_delta_provider.operations.append import preflight as append
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.delete import preflight as delete
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.merge import preflight as merge
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.preflight import table_snapshot
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update import preflight as update
from airflow_delta_provider.operations.update.spec import UpdateSpec

#: ``check(spec, storage_options)``: raises the error the operation would fail with, changes nothing.
Check = Callable[[Any, "Mapping[str, str] | None"], None]


def table_exists(spec: OperationSpec, storage_options: Mapping[str, str] | None = None) -> None:
    """The check of an operation on an existing table: that it exists."""
    table_snapshot(spec.table_path, storage_options)


def checked_by_its_runner(spec: OperationSpec, storage_options: Mapping[str, str] | None = None) -> None:
    """CONVERT and CLONE create their table with no Spark: their runners check it as fast."""


PREFLIGHTS: dict[type[OperationSpec], Check] = {
    UpdateSpec: update.check,
    DeleteSpec: delete.check,
    MergeSpec: merge.check,
    AppendSpec: append.check,
    ConvertSpec: checked_by_its_runner,
    CloneSpec: checked_by_its_runner,
}


def preflight(spec: OperationSpec, storage_options: Mapping[str, str] | None = None) -> None:
    """Check ``spec`` against its table's log before any engine starts; raises
    the :class:`~airflow_delta_provider.delta.errors.DeltaError` it would fail with."""
    PREFLIGHTS.get(type(spec), table_exists)(spec, storage_options)


__all__ = ["PREFLIGHTS", "Check", "preflight", "table_exists"]
