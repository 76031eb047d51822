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

from airflow_delta_provider.delta.symlink_manifest import OPERATION, generate
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import check_readable
from airflow_delta_provider.operations.generate.metrics import GenerateMetrics
from airflow_delta_provider.operations.generate.spec import GenerateSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run(
    spark: SparkSession | None, spec: GenerateSpec, storage_options: Mapping[str, str] | None = None
) -> CommandResult:
    """Generate the symlink manifests of the spec's table at its latest version
    (the spec's ``mode`` is the only one there is). ``spark`` may be None."""
    del spark  # the core does the work; a generation commits nothing (and records no token)
    target = DeltaTable(spec.table_path, storage_options)
    snapshot = target.snapshot()
    check_readable(snapshot.protocol, snapshot.metadata)
    result = generate(target, snapshot)
    metrics = GenerateMetrics(num_manifests_written=result.written, num_manifests_deleted=result.deleted)
    return CommandResult(spec.table_path, OPERATION, result.version, metrics)


__all__ = ["run"]
