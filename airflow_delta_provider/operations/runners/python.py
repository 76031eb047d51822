"""The runners of the operations that need no Spark (``engine="python"``).

Nothing here imports pyspark: the task's process runs these with the core alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_delta_provider.operations.alter import run as alter
from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.checkpoint import run as checkpoint
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone import run as clone
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert import run as convert
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.generate import run as generate
from airflow_delta_provider.operations.generate.spec import GenerateSpec
from airflow_delta_provider.operations.register import run as register
from airflow_delta_provider.operations.register.spec import RegisterSpec
from airflow_delta_provider.operations.restore import run as restore
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.vacuum import run as vacuum
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

#: ``run(spark, spec, storage_options)``: what every runner is.
Runner = Callable[[Any, Any, "Mapping[str, str] | None"], CommandResult]


PYTHON_RUNNERS: dict[type[OperationSpec], Runner] = {
    CheckpointSpec: checkpoint.run,
    VacuumSpec: vacuum.run,
    AlterSpec: alter.run,
    RestoreSpec: restore.run,
    ConvertSpec: convert.run,
    GenerateSpec: generate.run,
    CloneSpec: clone.run,
    RegisterSpec: register.run,
}

__all__ = ["PYTHON_RUNNERS", "Runner"]
