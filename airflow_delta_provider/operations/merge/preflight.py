"""MERGE's pre-flight (:mod:`airflow_delta_provider.operations.preflight`): the table
exists, ``on`` parses and names, through the target alias, only the table's
columns (the source's, and unqualified names, only the source knows), and the
source path exists."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_delta_provider.delta.expressions.resolve import check_columns
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.preflight import check_sources, table_snapshot


def check(spec: MergeSpec, storage_options: Mapping[str, str] | None = None) -> None:
    schema = table_snapshot(spec.table_path, storage_options).schema
    check_columns(spec.on, "merge condition (on)", schema, qualifier=spec.target_alias)
    check_sources(spec.table_path, spec.source, spec.source_format, spec.source_views, storage_options)


__all__ = ["check"]
