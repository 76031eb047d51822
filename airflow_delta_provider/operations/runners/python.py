"""The runners of the operations that need no Spark (``engine="python"``).

Nothing here imports pyspark: the task's process runs these with the core alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.operations.alter.run import run_alter
from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.checkpoint.run import run_checkpoint
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone.run import run_clone
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.run import run_convert
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.generate.run import run_generate
from airflow_delta_provider.operations.generate.spec import GenerateSpec
from airflow_delta_provider.operations.restore.run import run_restore
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.vacuum.run import run_vacuum
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

#: ``run(spark, spec, storage_options)``: what every runner is.
Runner = Callable[[Any, Any, "Mapping[str, str] | None"], CommandResult]


@dataclass(frozen=True)
class Keywords:
    """TRANSITIONAL: a command function that still takes the spec's fields as keywords."""

    function: Callable[..., CommandResult]
    ignores: tuple[str, ...] = ()
    renames: tuple[tuple[str, str], ...] = ()

    def __call__(self, spark: Any, spec: OperationSpec, storage_options: Mapping[str, str] | None) -> CommandResult:
        arguments = spec.command_arguments()
        arguments["table"] = arguments.pop("table_path")
        for name in self.ignores:
            del arguments[name]
        for name, parameter in self.renames:
            arguments[parameter] = arguments.pop(name)
        if "mode" in arguments and self.function.__name__ == "run_vacuum":
            arguments["lite"] = arguments.pop("mode") == "lite"
        return self.function(spark, **arguments, storage_options=storage_options)


PYTHON_RUNNERS: dict[type[OperationSpec], Runner] = {
    CheckpointSpec: Keywords(run_checkpoint, ignores=("io",)),
    VacuumSpec: Keywords(run_vacuum, ignores=("io",), renames=(("retention_check", "enforce_retention"),)),
    AlterSpec: Keywords(run_alter, ignores=("io",)),
    RestoreSpec: Keywords(run_restore, ignores=("io",)),
    ConvertSpec: Keywords(run_convert, ignores=("io",)),
    GenerateSpec: Keywords(run_generate, ignores=("io",)),
    CloneSpec: Keywords(run_clone, ignores=("io",), renames=(("source_path", "source"),)),
}

__all__ = ["PYTHON_RUNNERS", "Runner"]
