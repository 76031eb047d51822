"""CHECKPOINT: write the checkpoint of the latest version, optionally clean logs.

This needs no Spark: the core writes the checkpoint parquet with pyarrow.
No commit is made, so the result's ``version`` is the checkpointed version
and nothing records the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import check_writable
from airflow_delta_provider.operations.checkpoint.metrics import CheckpointMetrics
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

OPERATION = "CHECKPOINT"


def run(
    spark: SparkSession | None, spec: CheckpointSpec, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """Checkpoint the spec's table at its latest version. ``spark`` may be None."""
    del spark  # the core does the work; a checkpoint commits nothing (and records no token)
    target = DeltaTable(spec.table_path, storage_options)
    snapshot = target.snapshot()
    check_writable(snapshot.protocol, snapshot.metadata)
    write_checkpoint(target, snapshot)
    deleted = cleanup_expired_logs(target, snapshot) if spec.cleanup_logs else None
    metrics = CheckpointMetrics(
        num_add_files=snapshot.num_files, size_in_bytes=snapshot.size_in_bytes, num_deleted_log_files=deleted
    )
    return CommandResult(spec.table_path, OPERATION, snapshot.version, metrics)


__all__ = ["OPERATION", "run"]
