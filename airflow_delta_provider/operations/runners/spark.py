"""The runners of the operations that need Spark: importing this imports pyspark."""

from __future__ import annotations

from airflow_delta_provider.operations.append import spark as append
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.changes import spark as changes
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.delete import spark as delete
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.merge import spark as merge
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize import spark as optimize
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.reorg import spark as reorg
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.runners.python import Runner
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update import spark as update
from airflow_delta_provider.operations.update.spec import UpdateSpec

SPARK_RUNNERS: dict[type[OperationSpec], Runner] = {
    UpdateSpec: update.run,
    DeleteSpec: delete.run,
    AppendSpec: append.run,
    MergeSpec: merge.run,
    ReorgSpec: reorg.run,
    OptimizeSpec: optimize.run,
    ChangesSpec: changes.run,
}

__all__ = ["SPARK_RUNNERS"]
