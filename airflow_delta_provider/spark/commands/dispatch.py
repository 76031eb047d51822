"""Which command runs which request: a table from operation to command function.

Each command function takes the spark session, then the request's fields
as keywords (:meth:`~airflow_delta_provider.requests.base.OperationRequest.command_arguments`)
and ``storage_options``. A command that takes no ``token`` or ``io`` has them
left out. The functions are imported when a request runs, by module and name,
so the commands that need no Spark never import pyspark.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.requests.base import OperationRequest
from airflow_delta_provider.spark.result import CommandResult

_COMMANDS = "airflow_delta_provider.spark.commands"


@dataclass(frozen=True)
class Command:
    """A command function, by module and name, and the request fields it does not take."""

    module: str
    function: str
    ignores: tuple[str, ...] = ()

    def __call__(
        self, spark: Any, request: OperationRequest, storage_options: Mapping[str, str] | None
    ) -> CommandResult:
        run = getattr(importlib.import_module(f"{_COMMANDS}.{self.module}"), self.function)
        arguments = request.command_arguments()
        for name in self.ignores:
            del arguments[name]
        return run(spark, **arguments, storage_options=storage_options)


#: The command of each operation (a request's ``operation``).
COMMANDS: dict[str, Command] = {
    "update": Command("update", "run_update"),
    "delete": Command("delete", "run_delete"),
    "append": Command("append", "run_append"),
    "merge": Command("merge.command", "run_merge"),
    "checkpoint": Command("metadata.checkpoint", "run_checkpoint", ignores=("io",)),
    "vacuum": Command("vacuum", "run_vacuum", ignores=("io",)),
    "reorg": Command("reorg", "run_reorg_purge"),
    "optimize": Command("optimize", "run_optimize"),
    "alter": Command("metadata.alter", "run_alter", ignores=("io",)),
    "restore": Command("metadata.restore", "run_restore", ignores=("io",)),
    "changes": Command("changes", "run_changes", ignores=("token",)),
    "convert": Command("metadata.convert", "run_convert", ignores=("io",)),
    "generate": Command("metadata.generate", "run_generate", ignores=("io",)),
    "clone": Command("metadata.clone", "run_clone", ignores=("io",)),
}


def run_request(
    spark: Any, request: OperationRequest, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """Run the command of ``request`` on ``spark`` (None for a command that needs no Spark)."""
    return COMMANDS[request.operation](spark, request, storage_options)


__all__ = ["COMMANDS", "Command", "run_request"]
