"""CONVERT's partition spec, ``"day date, region string"``: its syntax, defined once.

The spec's ``validate()`` checks it when the operator or the CLI is given it,
and the plan reads the columns from it. Importing it loads no more of the core
than its errors (a DAG file imports the spec).
"""

from __future__ import annotations

import re

from airflow_delta_provider.delta.errors import InvalidInputError

#: Spark SQL type names a partition spec may use, to Delta's (decimal(p,s) too).
PARTITION_TYPES = {
    "string": "string",
    "boolean": "boolean",
    "tinyint": "byte",
    "byte": "byte",
    "smallint": "short",
    "short": "short",
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "float": "float",
    "double": "double",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}
_SPEC_ITEM = re.compile(r"^\s*(`(?:[^`]|``)+`|[^\s`]+)\s+(.+?)\s*$")  # a quoted name may double a backtick


def parse_partition_spec(spec: str | None) -> list[tuple[str, str]]:
    """``"day date, region string"`` as ``[("day", "date"), ("region", "string")]``
    (Delta type names: ``int`` is ``integer``, ``bigint`` ``long``, ...)."""
    if spec is None or not spec.strip():
        return []
    # Here, not at the top: importing the spec loads no more of the core than its errors.
    from airflow_delta_provider.delta.expressions.quoting import unquote_identifier
    from airflow_delta_provider.delta.schema.types import canonical_primitive, is_decimal

    out: list[tuple[str, str]] = []
    for item in re.split(r",(?![^(]*\))", spec):
        match = _SPEC_ITEM.match(item)
        if match is None:
            raise InvalidInputError(f"partition spec {spec!r}: expected 'column type, ...', got {item.strip()!r}")
        name, type_text = unquote_identifier(match.group(1)), match.group(2).strip().lower()
        delta_type = PARTITION_TYPES.get(type_text)
        if delta_type is None and is_decimal(type_text):
            delta_type = canonical_primitive(type_text)
        if delta_type is None:
            known = ", ".join(sorted(PARTITION_TYPES)) + ", decimal(p,s)"
            raise InvalidInputError(f"partition column {name!r}: unknown type {type_text!r} (one of {known})")
        if name.lower() in (n.lower() for n, _ in out):
            raise InvalidInputError(f"partition spec {spec!r} names {name!r} twice")
        out.append((name, delta_type))
    return out


__all__ = ["PARTITION_TYPES", "parse_partition_spec"]
