"""GENERATE's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
)

#: What GENERATE writes (delta-spark's ``GENERATE <mode> FOR TABLE``): symlink format manifests.
GENERATE_MODES = ("symlink_format_manifest",)


@dataclass(frozen=True, kw_only=True)
class GenerateSpec(OperationSpec):
    """The core does it with no Spark: it reads the log and writes the manifests."""

    operation = "generate"
    summary = "GENERATE symlink_format_manifest: the manifests Presto, Trino, Athena and Redshift Spectrum read"
    runs_without_spark = True

    mode: str = option(
        GENERATE_MODES[0],
        choices=GENERATE_MODES,
        help="what to generate: symlink_format_manifest (the only mode, and the default)",
    )

    def needs_spark(self) -> bool:
        return False
