"""A Delta schema as a catalog's columns.

Catalogs keep a copy of a table's columns for their other readers (Athena,
Trino, Databricks' UI); the Delta log stays the truth, and a schema change is
copied to the catalog after it commits.

- Unity Catalog: ``name``, ``type_name`` (``LONG``), ``type_text``
  (Spark's ``simpleString``, ``bigint``), ``type_json`` (the Delta field's
  JSON), ``position``, ``nullable`` and ``partition_index``, as Spark's
  Unity Catalog connector sends them.
- Glue and the Hive Metastore: ``name`` and the Hive type text
  (``bigint``, ``array<string>``, ``struct<a:int>``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_delta_provider.delta.schema.types import (
    DeltaType,
    canonical_primitive,
    fields_of,
    kind_of,
    parse_decimal,
    simple_string,
)

#: Delta primitive names whose SQL (Hive, Spark ``simpleString``) name differs.
_SQL_NAMES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
#: Delta primitive names whose Unity Catalog ``type_name`` differs from the upper-cased name.
_UC_NAMES = {"integer": "INT"}


def sql_type(delta_type: DeltaType) -> str:
    """The Hive / Spark SQL type text of a Delta type (``bigint``, ``map<string,int>``)."""
    return simple_string(delta_type, lambda name: _SQL_NAMES.get(canonical_primitive(name), canonical_primitive(name)))


def unity_type_name(delta_type: DeltaType) -> str:
    """Unity Catalog's ``ColumnTypeName`` of a Delta type (``LONG``, ``DECIMAL``, ``STRUCT``)."""
    kind = kind_of(delta_type)
    if kind in ("struct", "array", "map"):
        return kind.upper()
    name = str(delta_type)
    if name.startswith("decimal"):
        return "DECIMAL"
    return _UC_NAMES.get(name, name.upper())


def unity_columns(schema: Mapping[str, Any], partition_columns: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``columns`` of a Unity Catalog table for a Delta schema."""
    columns = []
    for position, field in enumerate(fields_of(schema)):
        delta_type = field["type"]
        column: dict[str, Any] = {
            "name": field["name"],
            "type_name": unity_type_name(delta_type),
            "type_text": sql_type(delta_type),
            "type_json": json.dumps(
                {
                    "name": field["name"],
                    "type": delta_type,
                    "nullable": bool(field.get("nullable", True)),
                    "metadata": field.get("metadata") or {},
                }
            ),
            "position": position,
            "nullable": bool(field.get("nullable", True)),
        }
        if isinstance(delta_type, str) and delta_type.startswith("decimal"):
            column["type_precision"], column["type_scale"] = parse_decimal(delta_type)
        if field["name"] in partition_columns:
            column["partition_index"] = list(partition_columns).index(field["name"])
        columns.append(column)
    return columns


def hive_columns(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, Hive type text)`` of each top-level column."""
    return [(field["name"], sql_type(field["type"])) for field in fields_of(schema)]


__all__ = ["hive_columns", "sql_type", "unity_columns", "unity_type_name"]
