"""Every operation, by name: its spec class, in the CLI's order.

A spec (``<operation>/spec.py``) is the one declaration of an operation's
arguments; the operators, the Spark CLI and the argv codec are generated from
it. Which code runs a spec is :mod:`.runners`' table. Importing this module
imports the specs only: neither pyspark, pyarrow nor the Delta core.
"""

from __future__ import annotations

from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.generate.spec import GenerateSpec
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.register.spec import RegisterSpec
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

#: Every spec class, by operation, in the CLI's order.
SPECS: dict[str, type[OperationSpec]] = {
    cls.operation: cls
    for cls in (
        UpdateSpec,
        DeleteSpec,
        AppendSpec,
        MergeSpec,
        CheckpointSpec,
        VacuumSpec,
        ReorgSpec,
        OptimizeSpec,
        AlterSpec,
        RestoreSpec,
        ChangesSpec,
        ConvertSpec,
        GenerateSpec,
        CloneSpec,
        RegisterSpec,
    )
}
#: Operations of the Spark CLI (``python -m airflow_delta_provider.spark <op>``).
OPERATIONS = tuple(SPECS)
#: Operations the core runs with no Spark at all (``engine="python"``).
PYTHON_ENGINE_OPERATIONS = tuple(op for op, cls in SPECS.items() if cls.runs_without_spark)

__all__ = ["OPERATIONS", "PYTHON_ENGINE_OPERATIONS", "SPECS"]
