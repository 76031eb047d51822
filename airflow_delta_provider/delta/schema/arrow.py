"""Delta types to and from pyarrow: the Arrow form data files hold.

Timestamps are microseconds, lists name their items ``element`` and map keys
are never null, as delta-spark writes Parquet; a ``variant`` is the
unshredded struct of :data:`VARIANT_ARROW_TYPE`. Delta field metadata rides
in Arrow field metadata, JSON-encoded, so a round trip keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.schema.types import (
    ELEMENT,
    KEY,
    MAX_DECIMAL_PRECISION,
    VALUE,
    DeltaType,
    Schema,
    canonical_primitive,
    fields_of,
    is_decimal,
    kind_of,
    parse_decimal,
    struct_field,
    struct_type,
)

#: ``variant`` in a data file (PROTOCOL.md "Variant data in Parquet", the
#: unshredded form): a struct of the binary-encoded ``value`` and
#: ``metadata``, both required. pyarrow reads delta-spark's files as this
#: struct, and it is the Arrow form Spark gives ``VariantType``.
VARIANT_ARROW_TYPE = pa.struct(
    [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
)

_PRIMITIVE_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "variant": VARIANT_ARROW_TYPE,
}

# Primitives the protocol knows but this implementation cannot put in a file.
_KNOWN_UNSUPPORTED = {
    "void": "void (NullType) columns are never written to data files",
}

# --- Delta -> Arrow ------------------------------------------------------------


def to_arrow_type(delta_type: DeltaType) -> pa.DataType:
    """The Arrow type that holds a Delta type in a data file.

    Timestamps are microseconds, UTC-adjusted for ``timestamp`` and local for
    ``timestamp_ntz``. List items are named ``element`` (the Parquet LIST
    layout delta-spark writes); map keys are never null. A ``variant`` is
    :data:`VARIANT_ARROW_TYPE`.
    """
    kind = kind_of(delta_type)
    if kind == "struct":
        return pa.struct([_to_arrow_field(f) for f in fields_of(delta_type)])
    if kind == "array":
        element = to_arrow_type(delta_type["elementType"])
        return pa.list_(pa.field(ELEMENT, element, nullable=bool(delta_type.get("containsNull", True))))
    if kind == "map":
        return pa.map_(
            pa.field(KEY, to_arrow_type(delta_type["keyType"]), nullable=False),
            pa.field(
                VALUE,
                to_arrow_type(delta_type["valueType"]),
                nullable=bool(delta_type.get("valueContainsNull", True)),
            ),
        )
    name = canonical_primitive(delta_type)
    if name in _PRIMITIVE_TO_ARROW:
        return _PRIMITIVE_TO_ARROW[name]
    if is_decimal(name):
        return pa.decimal128(*parse_decimal(name))
    reason = _KNOWN_UNSUPPORTED.get(name, "unknown type")
    raise UnsupportedFeatureError(f"unsupported Delta data type {delta_type!r}: {reason}")


def to_arrow_schema(schema: Mapping[str, Any], *, metadata: bool = True) -> pa.Schema:
    """The Arrow schema of a Delta struct type.

    With ``metadata``, each field's Delta metadata is kept in the Arrow field
    metadata, every value JSON-encoded, so :func:`from_arrow_schema` gives it
    back unchanged.
    """
    return pa.schema([_to_arrow_field(f, metadata=metadata) for f in fields_of(schema)])


def _to_arrow_field(field: Mapping[str, Any], *, metadata: bool = True) -> pa.Field:
    try:
        arrow_type = to_arrow_type(field["type"])
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(f"column {field['name']!r}: {exc}") from None
    meta = field.get("metadata") or {}
    encoded = {k: json.dumps(v) for k, v in meta.items()} if metadata and meta else None
    return pa.field(field["name"], arrow_type, nullable=bool(field.get("nullable", True)), metadata=encoded)


# --- Arrow -> Delta ------------------------------------------------------------


def from_arrow_type(arrow_type: pa.DataType) -> DeltaType:
    """The Delta type for an Arrow type.

    Lossless where Delta has no exact match: unsigned integers widen as
    Spark reads them from Parquet (uint64 -> ``decimal(20,0)``), string and
    binary variants collapse, dictionaries give their value type, and a
    timestamp of any unit is ``timestamp`` with a zone, ``timestamp_ntz``
    without. The null type is ``void``, as delta-rs writes it.
    """
    t = arrow_type
    if isinstance(t, pa.ExtensionType):
        return from_arrow_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return from_arrow_type(t.value_type)
    if pa.types.is_struct(t):
        return struct_type(_from_arrow_field(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": from_arrow_type(t.key_type),
            "valueType": from_arrow_type(t.item_type),
            "valueContainsNull": t.item_field.nullable,
        }
    if _is_any_list(t):
        return {
            "type": "array",
            "elementType": from_arrow_type(t.value_type),
            "containsNull": t.value_field.nullable,
        }
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise InvalidInputError(f"{t} is wider than Delta's decimal({MAX_DECIMAL_PRECISION},s)")
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    for predicate, name in _ARROW_PRIMITIVES:
        if predicate(t):
            return name
    raise InvalidInputError(f"the Arrow type {t} has no Delta equivalent")


def from_arrow_schema(schema: pa.Schema, *, metadata: bool = True) -> Schema:
    """The Delta struct type of an Arrow schema (see :func:`from_arrow_type`)."""
    return struct_type(_from_arrow_field(f, metadata=metadata) for f in schema)


def _from_arrow_field(field: pa.Field, *, metadata: bool = True) -> dict[str, Any]:
    try:
        delta_type = from_arrow_type(field.type)
    except InvalidInputError as exc:
        raise InvalidInputError(f"column {field.name!r}: {exc}") from None
    return struct_field(field.name, delta_type, field.nullable, _decode_metadata(field.metadata) if metadata else None)


def _decode_metadata(raw: Mapping[bytes, bytes] | None) -> dict[str, Any]:
    """Delta metadata back from Arrow field metadata written by :func:`to_arrow_schema`.

    Keys that Arrow or Parquet own, and values that are not JSON, are not
    Delta metadata and are left out.
    """
    out: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        k = key.decode("utf-8", "replace")
        if k.startswith(("ARROW:", "PARQUET:")):
            continue
        try:
            out[k] = json.loads(value)
        except ValueError:
            continue
    return out


def _is_any_list(t: pa.DataType) -> bool:
    checks = ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view")
    return any(getattr(pa.types, c, lambda _: False)(t) for c in checks)


_ARROW_PRIMITIVES = (
    (pa.types.is_null, "void"),
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_int8, "byte"),
    (pa.types.is_int16, "short"),
    (pa.types.is_int32, "integer"),
    (pa.types.is_int64, "long"),
    (pa.types.is_uint8, "short"),
    (pa.types.is_uint16, "integer"),
    (pa.types.is_uint32, "long"),
    (pa.types.is_uint64, "decimal(20,0)"),
    (pa.types.is_float16, "float"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
    (lambda t: getattr(pa.types, "is_string_view", lambda _: False)(t), "string"),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), "binary"),
    (lambda t: getattr(pa.types, "is_binary_view", lambda _: False)(t), "binary"),
    (pa.types.is_fixed_size_binary, "binary"),
    (pa.types.is_date, "date"),
)
