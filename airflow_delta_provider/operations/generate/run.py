"""GENERATE symlink_format_manifest: the manifests that engines without a
Delta reader (Presto, Trino's Hive connector, Athena, Redshift Spectrum) read.

This needs no Spark: the core reads the log and writes one manifest per
partition (:mod:`airflow_delta_provider.delta.symlink_manifest`). No commit
is made, so the result's ``version`` is the version the manifests reflect
and nothing records the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.symlink_manifest import MODE, OPERATION, generate
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import check_readable
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_generate(
    spark: SparkSession | None,
    table: str,
    mode: str = MODE,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    """Generate the symlink manifests of ``table``'s latest version. ``spark`` may be None."""
    del spark, token  # the core does the work; a generation commits nothing
    if mode != MODE:
        raise InvalidInputError(f"GENERATE mode {mode!r} is not supported: the only mode is {MODE}")
    target = DeltaTable(table, storage_options)
    snapshot = target.snapshot()
    check_readable(snapshot.protocol, snapshot.metadata)
    result = generate(target, snapshot)
    return CommandResult(table, OPERATION, result.version, result.metrics())


__all__ = ["run_generate"]
