"""UPDATE's pre-flight (:mod:`airflow_delta_provider.operations.preflight`): the table
exists, the condition and each SET expression parse and name its columns, and
each SET target is one of its columns, named once."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_delta_provider.delta.expressions.resolve import check_columns, set_targets
from airflow_delta_provider.operations.preflight import table_snapshot
from airflow_delta_provider.operations.update.spec import UpdateSpec


def check(spec: UpdateSpec, storage_options: Mapping[str, str] | None = None) -> None:
    schema = table_snapshot(spec.table_path, storage_options).schema
    if spec.condition is not None:
        check_columns(spec.condition, "condition", schema)
    targets = set_targets(schema, [target for target, _ in spec.updates])
    for field, (_, sql) in zip(targets, spec.updates):
        check_columns(sql, f"SET expression for {field['name']}", schema)


__all__ = ["check"]
