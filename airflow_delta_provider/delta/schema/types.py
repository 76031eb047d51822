"""The Delta type model: data types as schema JSON dicts, and their names.

A Delta schema is the parsed ``metaData.schemaString``: a struct type as a
plain dict (PROTOCOL.md "Schema Serialization Format")::

    {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}}]}

A *type* is either a primitive name (``"long"``, ``"decimal(10,2)"``) or a
dict for ``struct``, ``array`` (``elementType``, ``containsNull``) and
``map`` (``keyType``, ``valueType``, ``valueContainsNull``).

Everything here is a pure function over those dicts, so the same rules serve
the Spark engine, the CLI and the tests. Walking and looking up fields is
:mod:`.fields`; conversion to and from pyarrow is :mod:`.arrow`; the
write-time rules (enforcement, ``mergeSchema``) are :mod:`.evolution`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

DeltaType = Any  # str for primitives, dict for struct / array / map
Schema = dict[str, Any]  # a struct type
FieldPath = tuple[str, ...]

# Names of the nested parts of arrays and maps in column paths, as delta-spark
# spells them (SchemaMergingUtils.explode) and as Parquet names the children.
ELEMENT, KEY, VALUE = "element", "key", "value"

MAX_DECIMAL_PRECISION = 38

#: The semi-structured ``variant`` type (its Arrow form: :mod:`.arrow`).
VARIANT = "variant"

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def parse_decimal(delta_type: str) -> tuple[int, int]:
    """``"decimal(10,2)"`` -> ``(10, 2)``; bare ``"decimal"`` is Spark's (10, 0)."""
    text = delta_type.strip().lower()
    if text == "decimal":
        return 10, 0
    match = _DECIMAL_RE.match(text)
    if not match:
        raise InvalidInputError(f"not a decimal type: {delta_type!r}")
    precision, scale = int(match.group(1)), int(match.group(2))
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
        raise InvalidInputError(
            f"invalid decimal type {delta_type!r}: need 1 <= precision <= "
            f"{MAX_DECIMAL_PRECISION} and scale <= precision"
        )
    return precision, scale


def is_decimal(delta_type: DeltaType) -> bool:
    return isinstance(delta_type, str) and delta_type.strip().lower().startswith("decimal")


def is_primitive(delta_type: DeltaType) -> bool:
    """True for a primitive type name, False for struct, array and map."""
    return isinstance(delta_type, str)


def type_name(delta_type: DeltaType) -> str:
    """Spark's ``typeName``: ``"struct"``, ``"array"``, ``"map"`` or the primitive."""
    if isinstance(delta_type, str):
        return canonical_primitive(delta_type)
    return kind_of(delta_type)


def kind_of(delta_type: DeltaType) -> str:
    """``"struct"``, ``"array"``, ``"map"`` or ``"primitive"``."""
    if isinstance(delta_type, str):
        return "primitive"
    if isinstance(delta_type, Mapping):
        kind = delta_type.get("type")
        if kind in ("struct", "array", "map"):
            return kind
    raise InvalidInputError(f"not a Delta data type: {delta_type!r}")


def canonical_primitive(name: str) -> str:
    """One spelling per primitive, so ``decimal(10, 2)`` equals ``decimal(10,2)``."""
    if is_decimal(name):
        precision, scale = parse_decimal(name)
        return f"decimal({precision},{scale})"
    return name.strip().lower()


def fields_of(struct: Mapping[str, Any]) -> list[dict[str, Any]]:
    if kind_of(struct) != "struct":
        raise InvalidInputError(f"expected a struct type, got {struct!r}")
    return list(struct.get("fields") or [])


def struct_type(fields: Iterable[Mapping[str, Any]]) -> Schema:
    return {"type": "struct", "fields": [dict(f) for f in fields]}


def struct_field(
    name: str, delta_type: DeltaType, nullable: bool = True, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A field dict in delta-spark's key order."""
    return {"name": name, "type": delta_type, "nullable": nullable, "metadata": dict(metadata or {})}


def as_nullable(delta_type: DeltaType) -> DeltaType:
    """The type with every nested field, element and value nullable (Spark's
    ``asNullable``), as delta-spark stores DataFrame schemas."""
    kind = kind_of(delta_type)
    if kind == "struct":
        return struct_type({**f, "type": as_nullable(f["type"]), "nullable": True} for f in fields_of(delta_type))
    if kind == "array":
        return {"type": "array", "elementType": as_nullable(delta_type["elementType"]), "containsNull": True}
    if kind == "map":
        return {
            "type": "map",
            "keyType": as_nullable(delta_type["keyType"]),
            "valueType": as_nullable(delta_type["valueType"]),
            "valueContainsNull": True,
        }
    return delta_type


def format_path(path: Iterable[str]) -> str:
    """``("a", "b.c")`` -> ``a.`b.c```, quoting parts the way Spark does."""
    return ".".join(quote_identifier(p) if re.search(r"[.`\s]", p) else p for p in path)


def simple_string(t: DeltaType, primitive: Callable[[str], str] | None = None) -> str:
    """A one-line type, in Spark's simpleString style (``array<int>``); ``primitive``
    names the primitives (default: their canonical Delta names)."""
    name = primitive or canonical_primitive
    kind = kind_of(t)
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{simple_string(f['type'], name)}" for f in fields_of(t)) + ">"
    if kind == "array":
        return f"array<{simple_string(t['elementType'], name)}>"
    if kind == "map":
        return f"map<{simple_string(t['keyType'], name)},{simple_string(t['valueType'], name)}>"
    return name(t)


# --- Serialization ---------------------------------------------------------------


def normalize_type(delta_type: DeltaType) -> DeltaType:
    """A copy in delta-spark's canonical form: its key order, canonical
    primitive names, and the optional keys filled in."""
    kind = kind_of(delta_type)
    if kind == "struct":
        return struct_type(
            struct_field(f["name"], normalize_type(f["type"]), bool(f.get("nullable", True)), f.get("metadata"))
            for f in fields_of(delta_type)
        )
    if kind == "array":
        return {
            "type": "array",
            "elementType": normalize_type(delta_type["elementType"]),
            "containsNull": bool(delta_type.get("containsNull", True)),
        }
    if kind == "map":
        return {
            "type": "map",
            "keyType": normalize_type(delta_type["keyType"]),
            "valueType": normalize_type(delta_type["valueType"]),
            "valueContainsNull": bool(delta_type.get("valueContainsNull", True)),
        }
    return canonical_primitive(delta_type)


def schema_string(schema: Mapping[str, Any]) -> str:
    """The compact ``schemaString`` delta-spark would write for this schema."""
    return json.dumps(normalize_type(schema), separators=(",", ":"), ensure_ascii=False)
