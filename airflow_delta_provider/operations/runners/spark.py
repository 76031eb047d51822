"""The runners of the operations that need Spark: importing this imports pyspark."""

from __future__ import annotations

from airflow_delta_provider.operations.append.spark import run_append
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.changes.spark import run_changes
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.delete.spark import run_delete
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.merge.spark import run_merge
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize import spark as optimize
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.reorg.spark import run_reorg_purge
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.runners.python import Keywords, Runner
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update.spark import run_update
from airflow_delta_provider.operations.update.spec import UpdateSpec

SPARK_RUNNERS: dict[type[OperationSpec], Runner] = {
    UpdateSpec: Keywords(run_update, renames=(("updates", "set_exprs"),)),
    DeleteSpec: Keywords(run_delete),
    AppendSpec: Keywords(run_append, renames=(("source_format", "format"),)),
    MergeSpec: Keywords(run_merge, renames=(("options", "source_options"),)),
    ReorgSpec: Keywords(run_reorg_purge),
    OptimizeSpec: optimize.run,
    ChangesSpec: Keywords(
        run_changes,
        ignores=("token",),
        renames=(("start_version", "start"), ("end_version", "end"), ("output_path", "output")),
    ),
}

__all__ = ["SPARK_RUNNERS"]
