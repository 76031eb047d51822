"""Delta schema JSON: conversion to and from pyarrow, and the write-time rules.

A Delta schema is the parsed ``metaData.schemaString``: a struct type as a
plain dict (PROTOCOL.md "Schema Serialization Format")::

    {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}}]}

A *type* is either a primitive name (``"long"``, ``"decimal(10,2)"``) or a
dict for ``struct``, ``array`` (``elementType``, ``containsNull``) and
``map`` (``keyType``, ``valueType``, ``valueContainsNull``).

Everything here is a pure function over those dicts, so the same rules serve
the Spark engine, the CLI and the tests. The rules follow delta-spark:

- :func:`enforce_schema` is an append without ``mergeSchema``: data may leave
  table columns out (they read as null) but may not add any or change a type.
- :func:`merge_schemas` is ``mergeSchema`` (``SchemaMergingUtils.mergeSchemas``):
  new fields go to the end, existing ones keep the table's name, nullability
  and metadata, and only byte/short/integer widen.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping

import pyarrow as pa

from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)

DeltaType = Any  # str for primitives, dict for struct / array / map
Schema = dict[str, Any]  # a struct type
FieldPath = tuple[str, ...]

# Names of the nested parts of arrays and maps in column paths, as delta-spark
# spells them (SchemaMergingUtils.explode) and as Parquet names the children.
ELEMENT, KEY, VALUE = "element", "key", "value"

# Characters a column name may not hold without column mapping
# (delta-spark SchemaUtils.checkFieldNames).
INVALID_NAME_CHARS = " ,;{}()\n\t="

MAX_DECIMAL_PRECISION = 38

#: ``variant`` in a data file (PROTOCOL.md "Variant data in Parquet", the
#: unshredded form): a struct of the binary-encoded ``value`` and
#: ``metadata``, both required. pyarrow reads delta-spark's files as this
#: struct, and it is the Arrow form Spark gives ``VariantType``.
VARIANT = "variant"
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

# delta-spark lets these widen into each other on merge, because Parquet
# stores all three as INT32.
_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2}

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


# --- Type helpers ------------------------------------------------------------


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
        return _canonical_primitive(delta_type)
    return _kind(delta_type)


def _kind(delta_type: DeltaType) -> str:
    """``"struct"``, ``"array"``, ``"map"`` or ``"primitive"``."""
    if isinstance(delta_type, str):
        return "primitive"
    if isinstance(delta_type, Mapping):
        kind = delta_type.get("type")
        if kind in ("struct", "array", "map"):
            return kind
    raise InvalidInputError(f"not a Delta data type: {delta_type!r}")


def _canonical_primitive(name: str) -> str:
    """One spelling per primitive, so ``decimal(10, 2)`` equals ``decimal(10,2)``."""
    if is_decimal(name):
        precision, scale = parse_decimal(name)
        return f"decimal({precision},{scale})"
    return name.strip().lower()


def _fields(struct: Mapping[str, Any]) -> list[dict[str, Any]]:
    if _kind(struct) != "struct":
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
    kind = _kind(delta_type)
    if kind == "struct":
        return struct_type(
            {**f, "type": as_nullable(f["type"]), "nullable": True} for f in _fields(delta_type)
        )
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
    return ".".join(f"`{p.replace('`', '``')}`" if re.search(r"[.`\s]", p) else p for p in path)


# --- Delta -> Arrow ------------------------------------------------------------


def to_arrow_type(delta_type: DeltaType) -> pa.DataType:
    """The Arrow type that holds a Delta type in a data file.

    Timestamps are microseconds, UTC-adjusted for ``timestamp`` and local for
    ``timestamp_ntz``. List items are named ``element`` (the Parquet LIST
    layout delta-spark writes); map keys are never null. A ``variant`` is
    :data:`VARIANT_ARROW_TYPE`.
    """
    kind = _kind(delta_type)
    if kind == "struct":
        return pa.struct([_to_arrow_field(f) for f in _fields(delta_type)])
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
    name = _canonical_primitive(delta_type)
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
    return pa.schema([_to_arrow_field(f, metadata=metadata) for f in _fields(schema)])


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
    return struct_field(
        field.name, delta_type, field.nullable, _decode_metadata(field.metadata) if metadata else None
    )


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


# --- Serialization and display ---------------------------------------------------


def normalize_type(delta_type: DeltaType) -> DeltaType:
    """A copy in delta-spark's canonical form: its key order, canonical
    primitive names, and the optional keys filled in."""
    kind = _kind(delta_type)
    if kind == "struct":
        return struct_type(
            struct_field(
                f["name"], normalize_type(f["type"]), bool(f.get("nullable", True)), f.get("metadata")
            )
            for f in _fields(delta_type)
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
    return _canonical_primitive(delta_type)


def schema_string(schema: Mapping[str, Any]) -> str:
    """The compact ``schemaString`` delta-spark would write for this schema."""
    return json.dumps(normalize_type(schema), separators=(",", ":"), ensure_ascii=False)


def tree_string(schema: Mapping[str, Any]) -> str:
    """The schema as Spark's ``printTreeString`` shows it::

        root
         |-- id: long (nullable = true)
         |-- tags: array (nullable = true)
         |    |-- element: string (containsNull = true)
    """
    lines = ["root"]
    for f in _fields(schema):
        _tree_field(f, " |", lines)
    return "\n".join(lines)


def _tree_field(field: Mapping[str, Any], prefix: str, lines: list[str]) -> None:
    name = str(field["name"]).replace("\n", "\\n").replace("\t", "\\t")
    t = field["type"]
    lines.append(f"{prefix}-- {name}: {type_name(t)} (nullable = {_bool(field.get('nullable', True))})")
    _tree_type(t, prefix + "    |", lines)


def _tree_type(t: DeltaType, prefix: str, lines: list[str]) -> None:
    kind = _kind(t)
    if kind == "struct":
        for f in _fields(t):
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
            f"{prefix}-- {VALUE}: {type_name(value)} "
            f"(valueContainsNull = {_bool(t.get('valueContainsNull', True))})"
        )
        _tree_type(value, prefix + "    |", lines)


def _bool(value: Any) -> str:
    return "true" if value else "false"


# --- Lookup ----------------------------------------------------------------------


def column_names(schema: Mapping[str, Any]) -> list[str]:
    """Top-level column names, in order."""
    return [f["name"] for f in _fields(schema)]


def uses_type(delta_type: DeltaType, name: str) -> bool:
    """Whether the primitive ``name`` occurs anywhere in ``delta_type``: in a
    struct field, an array element, a map key or value, at any depth. Table
    features follow it (a ``timestamp_ntz`` column needs ``timestampNtz``)."""
    kind = _kind(delta_type)
    if kind == "struct":
        return any(uses_type(f["type"], name) for f in _fields(delta_type))
    if kind == "array":
        return uses_type(delta_type["elementType"], name)
    if kind == "map":
        return uses_type(delta_type["keyType"], name) or uses_type(delta_type["valueType"], name)
    return _canonical_primitive(delta_type) == name


def field_by_name(
    schema: Mapping[str, Any], name: str, case_insensitive: bool = True
) -> dict[str, Any] | None:
    """The top-level field called ``name`` (case-insensitively by default,
    as Delta resolves columns), or None."""
    fields = _fields(schema)
    for f in fields:
        if f["name"] == name:
            return f
    if case_insensitive:
        lowered = name.lower()
        for f in fields:
            if f["name"].lower() == lowered:
                return f
    return None


def leaf_fields(
    schema: Mapping[str, Any], limit: int | None = 32, exclude: Iterable[str] = ()
) -> list[tuple[FieldPath, DeltaType]]:
    """The first ``limit`` leaf columns, for per-file statistics.

    Structs are walked depth-first; arrays and maps are leaves. Top-level
    columns in ``exclude`` (the partition columns, matched case-insensitively)
    are skipped, and so are ``void`` columns, which are never in a file.
    ``limit`` None or negative means every leaf, as
    ``delta.dataSkippingNumIndexedCols = -1`` does.
    """
    skip = {name.lower() for name in exclude}
    unlimited = limit is None or limit < 0
    out: list[tuple[FieldPath, DeltaType]] = []

    def walk(fields: list[dict[str, Any]], prefix: FieldPath) -> None:
        for f in fields:
            if not unlimited and len(out) >= limit:  # type: ignore[operator]
                return
            if not prefix and f["name"].lower() in skip:
                continue
            t, path = f["type"], prefix + (f["name"],)
            if _kind(t) == "struct":
                walk(_fields(t), path)
            elif not (is_primitive(t) and _canonical_primitive(t) == "void"):
                out.append((path, t))

    walk(_fields(schema), ())
    return out


# --- Column names ----------------------------------------------------------------


def check_column_names(schema: Mapping[str, Any]) -> None:
    """Refuse duplicate names (case-insensitively, at every nesting level)
    and names holding any of `` ,;{}()\\n\\t=``, as delta-spark does for a
    table without column mapping."""
    check_unique_names(schema)
    for path, _ in walk_fields(schema, ()):
        bad = sorted({c for c in path[-1] if c in INVALID_NAME_CHARS})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            raise InvalidInputError(
                f"invalid column name {format_path(path)}: it contains {shown}; "
                f"column names may not contain any of {INVALID_NAME_CHARS!r}"
            )


def check_unique_names(schema: Mapping[str, Any]) -> None:
    """DELTA_DUPLICATE_COLUMNS_FOUND: two paths equal up to case."""
    seen: dict[tuple[str, ...], FieldPath] = {}
    dupes: list[str] = []
    for path, _ in walk_fields(schema, ()):
        key = tuple(p.lower() for p in path)
        if key in seen:
            dupes.append(f"{format_path(seen[key])} and {format_path(path)}")
        else:
            seen[key] = path
    if dupes:
        raise InvalidInputError(f"duplicate column names (case-insensitive): {'; '.join(dupes)}")


def walk_fields(t: DeltaType, prefix: FieldPath = ()) -> Iterable[tuple[FieldPath, dict[str, Any]]]:
    """Every struct field at any depth, with its path (arrays and maps add
    ``element`` / ``key`` / ``value``), parents before children."""
    kind = _kind(t)
    if kind == "struct":
        for f in _fields(t):
            path = prefix + (f["name"],)
            yield path, f
            yield from walk_fields(f["type"], path)
    elif kind == "array":
        yield from walk_fields(t["elementType"], prefix + (ELEMENT,))
    elif kind == "map":
        yield from walk_fields(t["keyType"], prefix + (KEY,))
        yield from walk_fields(t["valueType"], prefix + (VALUE,))


# --- Enforcement (append without mergeSchema) ------------------------------------


def enforce_schema(table: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """Check that data with schema ``data`` may be appended as is.

    Columns match case-insensitively, at every depth. The data may leave out
    nullable table columns (they read as null), but may not bring a column
    the table lacks, spell a column with other casing (files would then hold
    a name other engines do not find), leave out a non-nullable column, or
    change a type. Types compare exactly, nullability aside.

    Raises SchemaMismatchError listing every difference, with both schemas.
    """
    check_unique_names(data)
    problems: list[str] = []
    _enforce_struct(table, data, (), problems)
    if problems:
        raise _mismatch(
            "Schema mismatch writing to the Delta table",
            problems,
            table,
            data,
            hint="To add columns, write with mergeSchema.",
        )


def _enforce_struct(table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str]) -> None:
    table_fields = {f["name"].lower(): f for f in _fields(table)}
    for df in _fields(data):
        col = path + (df["name"],)
        tf = table_fields.get(df["name"].lower())
        if tf is None:
            problems.append(f"column {format_path(col)}: not in the table schema")
        elif tf["name"] != df["name"]:
            problems.append(
                f"column {format_path(col)}: the table spells it {format_path(path + (tf['name'],))}; "
                "rename the data column to match"
            )
        else:
            _enforce_type(tf["type"], df["type"], col, problems)
    _require_non_nullable(table, data, path, problems)


def _enforce_type(table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str]) -> None:
    kind, data_kind = _kind(table), _kind(data)
    if kind != data_kind:
        problems.append(_type_problem(path, table, data))
    elif kind == "struct":
        _enforce_struct(table, data, path, problems)
    elif kind == "array":
        _enforce_type(table["elementType"], data["elementType"], path + (ELEMENT,), problems)
    elif kind == "map":
        _enforce_type(table["keyType"], data["keyType"], path + (KEY,), problems)
        _enforce_type(table["valueType"], data["valueType"], path + (VALUE,), problems)
    elif _canonical_primitive(table) != _canonical_primitive(data):
        problems.append(_type_problem(path, table, data))


def _require_non_nullable(table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str]) -> None:
    present = {f["name"].lower() for f in _fields(data)}
    for tf in _fields(table):
        if not tf.get("nullable", True) and tf["name"].lower() not in present:
            problems.append(
                f"column {format_path(path + (tf['name'],))}: missing from the data, "
                "but the table column is NOT NULL"
            )


def _type_problem(path: FieldPath, table: DeltaType, data: DeltaType) -> str:
    return f"column {format_path(path)}: type {_short(data)} in the data, {_short(table)} in the table"


def _short(t: DeltaType) -> str:
    """A one-line type, in Spark's simpleString style (``array<int>``)."""
    kind = _kind(t)
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_short(f['type'])}" for f in _fields(t)) + ">"
    if kind == "array":
        return f"array<{_short(t['elementType'])}>"
    if kind == "map":
        return f"map<{_short(t['keyType'])},{_short(t['valueType'])}>"
    return _canonical_primitive(t)


def _mismatch(
    title: str, problems: list[str], table: Mapping[str, Any], data: Mapping[str, Any], hint: str = ""
) -> SchemaMismatchError:
    lines = [f"{title}:"]
    lines += [f"  - {p}" for p in problems]
    if hint:
        lines.append(hint)
    lines += ["", "Table schema:", tree_string(table), "", "Data schema:", tree_string(data)]
    return SchemaMismatchError("\n".join(lines))


# --- Merge (mergeSchema) -----------------------------------------------------------


def merge_schemas(table: Mapping[str, Any], data: Mapping[str, Any], *, type_widening: bool = False) -> Schema:
    """The table schema after appending data of schema ``data`` with mergeSchema.

    delta-spark's ``SchemaMergingUtils.mergeSchemas``:

    - fields match case-insensitively; a matched field keeps the table's
      name, nullability and metadata, and its types merge recursively
      (arrays and maps element-wise, keeping the table's containsNull);
    - fields only in the data are appended at the end of their struct, made
      nullable (delta-spark stores DataFrame schemas ``asNullable``);
    - ``void`` merges with any type into that type; byte, short and integer
      widen to the wider; anything else must be equal, decimals included;
    - with ``type_widening`` (the table has ``delta.enableTypeWidening``), a
      column also takes a wider data type where
      :func:`.type_widening.widens_on_merge` allows it, and the change is
      recorded in the field's ``delta.typeChanges``. Without it, such a
      change is refused with a hint to enable it.

    A non-nullable table column the data leaves out is refused too, since
    every new row would break it. Raises SchemaMismatchError listing every
    conflict with both schemas, or InvalidInputError for duplicate or
    invalid new column names.
    """
    from airflow_delta_provider.delta.table_features import type_widening as widening

    check_unique_names(data)
    problems: list[str] = []
    merged = _merge_struct(table, data, (), problems, widen=type_widening)
    if problems:
        raise _mismatch("Cannot merge the data schema into the table schema", problems, table, data)
    return widening.record(table, merged) if type_widening else merged


def _merge_struct(
    table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str], *, widen: bool = False
) -> Schema:
    data_fields = {f["name"].lower(): f for f in _fields(data)}
    merged: list[dict[str, Any]] = []
    for tf in _fields(table):
        df = data_fields.pop(tf["name"].lower(), None)
        if df is None:
            merged.append(dict(tf))
        else:
            col = path + (tf["name"],)
            merged.append({**tf, "type": _merge_type(tf["type"], df["type"], col, problems, widen=widen)})
    for df in data_fields.values():  # dicts keep the data's order
        new = struct_field(df["name"], as_nullable(df["type"]), True, df.get("metadata"))
        _check_new_names(new, path)
        merged.append(new)
    _require_non_nullable(table, data, path, problems)
    return struct_type(merged)


def _check_new_names(field: dict[str, Any], path: FieldPath) -> None:
    try:
        check_column_names(struct_type([field]))
    except InvalidInputError as exc:
        where = f" (inside {format_path(path)})" if path else ""
        raise InvalidInputError(f"cannot add column{where}: {exc}") from None


def _merge_type(
    table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str], *, widen: bool = False
) -> DeltaType:
    kind, data_kind = _kind(table), _kind(data)
    if kind == data_kind == "struct":
        return _merge_struct(table, data, path, problems, widen=widen)
    if kind == data_kind == "array":
        return {
            "type": "array",
            "elementType": _merge_type(
                table["elementType"], data["elementType"], path + (ELEMENT,), problems, widen=widen
            ),
            "containsNull": bool(table.get("containsNull", True)),
        }
    if kind == data_kind == "map":
        return {
            "type": "map",
            "keyType": _merge_type(table["keyType"], data["keyType"], path + (KEY,), problems, widen=widen),
            "valueType": _merge_type(table["valueType"], data["valueType"], path + (VALUE,), problems, widen=widen),
            "valueContainsNull": bool(table.get("valueContainsNull", True)),
        }
    t = _canonical_primitive(table) if kind == "primitive" else None
    d = _canonical_primitive(data) if data_kind == "primitive" else None
    if t is not None and d is not None:
        if t == d:
            return table
        from airflow_delta_provider.delta.table_features.type_widening import is_supported, widens_on_merge

        if widen and widens_on_merge(t, d):
            return d
        if t in _INTEGRAL_RANK and d in _INTEGRAL_RANK:
            return t if _INTEGRAL_RANK[t] >= _INTEGRAL_RANK[d] else d
        if widens_on_merge(t, d):
            problems.append(
                f"column {format_path(path)}: cannot widen {t} in the table to {d} in the data: "
                "type widening is off (set the table property delta.enableTypeWidening=true)"
            )
            return table
        if widen and is_supported(t, d):
            problems.append(
                f"column {format_path(path)}: cannot change {t} in the table to {d} in the data: "
                "mergeSchema never turns an integer column into double or decimal"
            )
            return table
        if is_decimal(t) and is_decimal(d):
            problems.append(
                f"column {format_path(path)}: cannot change {t} to {d} "
                "(a decimal may only widen, keeping its integer digits, with type widening on)"
            )
            return table
    if t == "void":
        return as_nullable(data)
    if d == "void":
        return table
    problems.append(
        f"column {format_path(path)}: cannot merge type {_short(data)} in the data "
        f"into {_short(table)} in the table"
    )
    return table
