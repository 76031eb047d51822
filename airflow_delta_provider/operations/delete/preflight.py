"""DELETE's pre-flight (:mod:`airflow_delta_provider.operations.preflight`): the table
exists, and the condition parses and names its columns."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_delta_provider.delta.expressions.resolve import check_columns
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.preflight import table_snapshot


def check(spec: DeleteSpec, storage_options: Mapping[str, str] | None = None) -> None:
    schema = table_snapshot(spec.table_path, storage_options).schema
    if spec.condition is not None:
        check_columns(spec.condition, "condition", schema)


__all__ = ["check"]
