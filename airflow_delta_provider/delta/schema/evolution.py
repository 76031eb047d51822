"""The write-time schema rules: enforcement and ``mergeSchema``.

They follow delta-spark:

- :func:`enforce_schema` is an append without ``mergeSchema``: data may leave
  table columns out (they read as null) but may not add any or change a type.
- :func:`merge_schemas` is ``mergeSchema`` (``SchemaMergingUtils.mergeSchemas``):
  new fields go to the end, existing ones keep the table's name, nullability
  and metadata, and only byte/short/integer widen (and, with type widening
  on, what :func:`.widening.widens_on_merge` allows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.schema import widening
from airflow_delta_provider.delta.schema.display import tree_string
from airflow_delta_provider.delta.schema.names import check_column_names, check_unique_names
from airflow_delta_provider.delta.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    DeltaType,
    FieldPath,
    Schema,
    as_nullable,
    canonical_primitive,
    fields_of,
    format_path,
    is_decimal,
    kind_of,
    simple_string,
    struct_field,
    struct_type,
)

# delta-spark lets these widen into each other on merge, because Parquet
# stores all three as INT32.
_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2}


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
    table_fields = {f["name"].lower(): f for f in fields_of(table)}
    for df in fields_of(data):
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
    kind, data_kind = kind_of(table), kind_of(data)
    if kind != data_kind:
        problems.append(_type_problem(path, table, data))
    elif kind == "struct":
        _enforce_struct(table, data, path, problems)
    elif kind == "array":
        _enforce_type(table["elementType"], data["elementType"], path + (ELEMENT,), problems)
    elif kind == "map":
        _enforce_type(table["keyType"], data["keyType"], path + (KEY,), problems)
        _enforce_type(table["valueType"], data["valueType"], path + (VALUE,), problems)
    elif canonical_primitive(table) != canonical_primitive(data):
        problems.append(_type_problem(path, table, data))


def _require_non_nullable(table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str]) -> None:
    present = {f["name"].lower() for f in fields_of(data)}
    for tf in fields_of(table):
        if not tf.get("nullable", True) and tf["name"].lower() not in present:
            problems.append(
                f"column {format_path(path + (tf['name'],))}: missing from the data, "
                "but the table column is NOT NULL"
            )


def _type_problem(path: FieldPath, table: DeltaType, data: DeltaType) -> str:
    return f"column {format_path(path)}: type {simple_string(data)} in the data, {simple_string(table)} in the table"


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
      :func:`.widening.widens_on_merge` allows it, and the change is
      recorded in the field's ``delta.typeChanges``. Without it, such a
      change is refused with a hint to enable it.

    A non-nullable table column the data leaves out is refused too, since
    every new row would break it. Raises SchemaMismatchError listing every
    conflict with both schemas, or InvalidInputError for duplicate or
    invalid new column names.
    """
    check_unique_names(data)
    problems: list[str] = []
    merged = _merge_struct(table, data, (), problems, widen=type_widening)
    if problems:
        raise _mismatch("Cannot merge the data schema into the table schema", problems, table, data)
    return widening.record(table, merged) if type_widening else merged


def _merge_struct(
    table: DeltaType, data: DeltaType, path: FieldPath, problems: list[str], *, widen: bool = False
) -> Schema:
    data_fields = {f["name"].lower(): f for f in fields_of(data)}
    merged: list[dict[str, Any]] = []
    for tf in fields_of(table):
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
    kind, data_kind = kind_of(table), kind_of(data)
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
    t = canonical_primitive(table) if kind == "primitive" else None
    d = canonical_primitive(data) if data_kind == "primitive" else None
    if t is not None and d is not None:
        if t == d:
            return table
        if widen and widening.widens_on_merge(t, d):
            return d
        if t in _INTEGRAL_RANK and d in _INTEGRAL_RANK:
            return t if _INTEGRAL_RANK[t] >= _INTEGRAL_RANK[d] else d
        if widening.widens_on_merge(t, d):
            problems.append(
                f"column {format_path(path)}: cannot widen {t} in the table to {d} in the data: "
                "type widening is off (set the table property delta.enableTypeWidening=true)"
            )
            return table
        if widen and widening.is_supported(t, d):
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
        f"column {format_path(path)}: cannot merge type {simple_string(data)} in the data "
        f"into {simple_string(table)} in the table"
    )
    return table
