"""APPEND's pre-flight (:mod:`airflow_delta_provider.operations.preflight`).

A table that exists keeps its partitioning, and ``replace_where`` names its
columns (unless ``merge_schema`` may add the column from the source). Where
no table exists, an append must not create one over data files no log
tracks (:mod:`.location`). The source path exists.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_delta_provider.delta.expressions.resolve import check_columns
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.append.location import check_new_table_location
from airflow_delta_provider.operations.append.plan import check_partition_by, check_replace_predicate
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.preflight import check_sources


def check(spec: AppendSpec, storage_options: Mapping[str, str] | None = None) -> None:
    target = DeltaTable(spec.table_path, storage_options)
    if not target.exists():
        if spec.mode != "overwrite":
            check_new_table_location(target.storage, spec.partition_by)
    else:
        snapshot = target.snapshot()
        if not spec.overwrite_schema:
            check_partition_by(spec.partition_by, snapshot)
        if spec.replace_where is not None and not spec.merge_schema:
            check_columns(spec.replace_where, "replace_where", snapshot.schema)
            check_replace_predicate(spec.replace_where)
    check_sources(spec.table_path, spec.source, spec.source_format, spec.source_views, storage_options)


__all__ = ["check"]
