"""CHECKPOINT: write the checkpoint of the latest version, optionally clean logs.

This needs no Spark: the core writes the checkpoint parquet with pyarrow.
No commit is made, so the result's ``version`` is the checkpointed version
and nothing records the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import check_writable
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

OPERATION = "CHECKPOINT"


def run_checkpoint(
    spark: SparkSession | None,
    table: str,
    cleanup_logs: bool = False,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    """Checkpoint ``table`` at its latest version. ``spark`` may be None."""
    del spark, token  # the core does the work; a checkpoint commits nothing
    target = DeltaTable(table, storage_options)
    snapshot = target.snapshot()
    check_writable(snapshot.protocol, snapshot.metadata)
    write_checkpoint(target, snapshot)
    metrics: dict[str, Any] = {
        "numAddFiles": snapshot.num_files,
        "sizeInBytes": snapshot.size_in_bytes,
    }
    if cleanup_logs:
        metrics["numDeletedLogFiles"] = cleanup_expired_logs(target, snapshot)
    return CommandResult(table, OPERATION, snapshot.version, metrics)


__all__ = ["OPERATION", "run_checkpoint"]
