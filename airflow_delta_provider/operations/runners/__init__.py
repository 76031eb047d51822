"""Which code runs each operation: a table from spec class to runner.

A runner is ``run(spark, spec, storage_options) -> CommandResult``. The
operations that need no Spark have theirs in :mod:`.python`, which imports no
pyspark, so ``engine="python"`` never loads it; the others are in
:mod:`.spark`. Both are tables of plain imports: a reader, and the import
graph, see which function runs each spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.runners.python import PYTHON_RUNNERS, Runner
from airflow_delta_provider.operations.spec.base import OperationSpec


def runner_for(spec_class: type[OperationSpec]) -> Runner:
    """The function that runs specs of ``spec_class``."""
    runner = PYTHON_RUNNERS.get(spec_class)
    if runner is not None:
        return runner
    from airflow_delta_provider.operations.runners.spark import SPARK_RUNNERS  # pyspark: only for Spark's operations

    return SPARK_RUNNERS[spec_class]


def run_spec(spark: Any, spec: OperationSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Run ``spec`` on ``spark`` (None for an operation that needs no Spark)."""
    return runner_for(type(spec))(spark, spec, storage_options)


__all__ = ["Runner", "run_spec", "runner_for"]
