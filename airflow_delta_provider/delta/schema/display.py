"""A schema as Spark prints it (``printTreeString``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.schema.types import ELEMENT, KEY, VALUE, DeltaType, fields_of, kind_of, type_name


def tree_string(schema: Mapping[str, Any]) -> str:
    """The schema as Spark's ``printTreeString`` shows it::

    root
     |-- id: long (nullable = true)
     |-- tags: array (nullable = true)
     |    |-- element: string (containsNull = true)
    """
    lines = ["root"]
    for f in fields_of(schema):
        _tree_field(f, " |", lines)
    return "\n".join(lines)


def _tree_field(field: Mapping[str, Any], prefix: str, lines: list[str]) -> None:
    name = str(field["name"]).replace("\n", "\\n").replace("\t", "\\t")
    t = field["type"]
    lines.append(f"{prefix}-- {name}: {type_name(t)} (nullable = {_bool(field.get('nullable', True))})")
    _tree_type(t, prefix + "    |", lines)


def _tree_type(t: DeltaType, prefix: str, lines: list[str]) -> None:
    kind = kind_of(t)
    if kind == "struct":
        for f in fields_of(t):
            _tree_field(f, prefix, lines)
    elif kind == "array":
        element = t["elementType"]
        contains_null = _bool(t.get("containsNull", True))
        lines.append(f"{prefix}-- {ELEMENT}: {type_name(element)} (containsNull = {contains_null})")
        _tree_type(element, prefix + "    |", lines)
    elif kind == "map":
        key, value = t["keyType"], t["valueType"]
        lines.append(f"{prefix}-- {KEY}: {type_name(key)}")
        _tree_type(key, prefix + "    |", lines)
        lines.append(
            f"{prefix}-- {VALUE}: {type_name(value)} (valueContainsNull = {_bool(t.get('valueContainsNull', True))})"
        )
        _tree_type(value, prefix + "    |", lines)


def _bool(value: Any) -> str:
    return "true" if value else "false"
