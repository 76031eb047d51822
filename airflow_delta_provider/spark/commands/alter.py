"""ALTER TABLE: one schema or property change as a metadata-only commit.

This needs no Spark: the core plans and commits the new ``metaData``
(:mod:`airflow_delta_provider.delta.schema_changes`). The change comes as
JSON, e.g. ``{"rename_column": {"column": "a", "to": "b"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.schema_changes import alter_table, change_from_json
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.result import CommandResult


def run_alter(
    spark: Any,
    table: str,
    change: str | dict[str, Any],
    enable_column_mapping: bool = False,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    """Apply ``change`` (JSON text or its dict) to ``table``. ``spark`` may be None."""
    del spark
    if isinstance(change, str):
        try:
            change = json.loads(change)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"the change is not JSON: {exc}") from None
    if not isinstance(change, dict):
        raise InvalidInputError("the change must be a JSON object, e.g. {\"drop_columns\": [\"a\"]}")
    parsed = change_from_json(change)
    result = alter_table(DeltaTable(table, storage_options), parsed, enable_column_mapping=enable_column_mapping, token=token)
    return CommandResult(table, parsed.operation, result.version, {})


__all__ = ["run_alter"]
