"""The write-time schema rules: enforcement and schema evolution (``merge_schema``).

They follow delta-spark:

- :func:`enforce_schema` is an APPEND without ``merge_schema``: data may leave
  table columns out (they read as null) but may not add any or change a type.
- :func:`merge_schemas` is ``merge_schema`` (delta-spark's ``mergeSchema``,
  ``SchemaMergingUtils.mergeSchemas``): new fields go to the end, existing
  ones keep the table's name, nullability and metadata, and only
  byte/short/integer widen (and, with type widening on, what
  :func:`.widening.widens_on_merge` allows).

Both raise SchemaMismatchError with one line a problem: the column, the
types, and a hint that fits it, in the operator's own argument names
(``merge_schema``, ``overwrite_schema``, ``mode``, ``table_schema``). Whether
``merge_schema`` (with or without type widening) would solve a type clash
is asked of the merge rules themselves (:func:`_merged_type`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.schema import widening
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
from airflow_delta_provider.delta.table_properties import ENABLE_TYPE_WIDENING

# delta-spark lets these widen into each other on merge, because Parquet
# stores all three as INT32.
_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2}

#: The APPEND arguments the hints name (fields of
#: :class:`airflow_delta_provider.operations.append.spec.AppendSpec`, and of the operator).
MERGE_SCHEMA_ARG = "merge_schema"
OVERWRITE_SCHEMA_ARG = "overwrite_schema"
MODE_ARG = "mode"
TABLE_SCHEMA_ARG = "table_schema"

_REPLACE = f'replace the table, schema included, with {MODE_ARG}="overwrite" and {OVERWRITE_SCHEMA_ARG}=True'


# --- Problems and their hints ---------------------------------------------------------


@dataclass
class _Report:
    """The problems found, one line each, and what their hints may suggest.

    ``type_widening``: the table has ``delta.enableTypeWidening=true``.
    ``declared``: the table schema is the writer's ``table_schema`` (a table
    it creates or replaces), not the table's.
    ``can_overwrite``: the operation can replace the table (APPEND's modes).
    ``any_names``: the table maps columns, so a new name may hold any character.
    """

    type_widening: bool = False
    declared: bool = False
    can_overwrite: bool = False
    any_names: bool = False
    problems: list[str] = field(default_factory=list)
    extra: list[FieldPath] = field(default_factory=list)
    columns: list[FieldPath] = field(default_factory=list)

    def add(self, column: FieldPath, problem: str, fixes: list[str] | None = None) -> None:
        self.columns.append(column)
        self.problems.append(f"{problem}; {', or '.join(fixes)}" if fixes else problem)

    def differing(self) -> list[str]:
        """The columns that differ, each once: those the table lacks first, as :meth:`lines` lists them."""
        return list(dict.fromkeys(format_path(p) for p in [*self.extra, *self.columns]))

    def keep_fixes(self, path: FieldPath, table: DeltaType) -> list[str]:
        """The fixes of a type clash that keep the table's type."""
        fixes = [f"cast the source column {format_path(path)} to {simple_string(table)}"]
        if self.can_overwrite and not self.declared:
            fixes.append(_REPLACE)
        return fixes

    def lines(self) -> list[str]:
        """Every problem, the columns the table lacks first."""
        if not self.extra:
            return self.problems
        names = ", ".join(format_path(p) for p in self.extra)
        one = len(self.extra) == 1
        what, them = ("column", "it") if one else ("columns", "them")
        if self.declared:
            line = (
                f"{what} {names}: not in the declared {TABLE_SCHEMA_ARG}; "
                f"add {them} to {TABLE_SCHEMA_ARG}, or drop {them} from the source"
            )
        else:
            line = f"{what} {names}: not in the table schema; to add {them}, write with {MERGE_SCHEMA_ARG}=True"
        return [line, *self.problems]


def _widening(path: FieldPath, table: DeltaType, to: DeltaType) -> str:
    return f"widen {format_path(path)} from {simple_string(table)} to {simple_string(to)}"


def _evolve_fix(path: FieldPath, table: DeltaType, merged: DeltaType) -> str:
    """How schema evolution takes data that merges into ``table`` as ``merged``."""
    if simple_string(merged) == simple_string(table):
        return f"write with {MERGE_SCHEMA_ARG}=True to store it as {simple_string(table)}"
    return f"write with {MERGE_SCHEMA_ARG}=True to {_widening(path, table, merged)}"


def _mismatch(title: str, report: _Report) -> SchemaMismatchError:
    """The error: the differing columns named first, then one line each saying how it
    differs and what fixes it (the short diff; the two whole schemas would bury it)."""
    columns = report.differing()
    which = f"column {columns[0]}" if len(columns) == 1 else f"{len(columns)} columns ({', '.join(columns)})"
    return SchemaMismatchError("\n".join([f"{title} in {which}:", *(f"  - {p}" for p in report.lines())]))


# --- Enforcement (APPEND without merge_schema) ------------------------------------------


def enforce_schema(
    table: Mapping[str, Any], data: Mapping[str, Any], *, type_widening: bool = False, declared: bool = False
) -> None:
    """Check that data with schema ``data`` may be appended as is.

    Columns match case-insensitively, at every depth. The data may leave out
    nullable table columns (they read as null), but may not bring a column
    the table lacks, spell a column with other casing (files would then hold
    a name other engines do not find), leave out a non-nullable column, or
    change a type. Types compare exactly, nullability aside.

    ``type_widening``: the table has ``delta.enableTypeWidening=true``, so a
    clash that widening solves needs only ``merge_schema``. ``declared``:
    ``table`` is the ``table_schema`` the writer declared for a table it
    creates or replaces, so hints point at that instead of ``merge_schema``.

    Raises SchemaMismatchError naming the differing columns, with one line a difference.
    """
    check_unique_names(data)
    report = _Report(type_widening=type_widening, declared=declared, can_overwrite=True)
    _enforce_struct(table, data, (), report)
    if report.problems or report.extra:
        raise _mismatch("Schema mismatch writing to the Delta table", report)


def _enforce_struct(table: DeltaType, data: DeltaType, path: FieldPath, report: _Report) -> None:
    table_fields = {f["name"].lower(): f for f in fields_of(table)}
    for df in fields_of(data):
        col = path + (df["name"],)
        tf = table_fields.get(df["name"].lower())
        if tf is None:
            report.extra.append(col)
        elif tf["name"] != df["name"]:
            report.add(
                col,
                f"column {format_path(col)}: the table spells it {format_path(path + (tf['name'],))}; "
                "rename the data column to match",
            )
        else:
            _enforce_type(tf["type"], df["type"], col, report)
    _require_non_nullable(table, data, path, report)


def _enforce_type(table: DeltaType, data: DeltaType, path: FieldPath, report: _Report) -> None:
    kind, data_kind = kind_of(table), kind_of(data)
    if kind != data_kind:
        _type_clash(path, table, data, report)
    elif kind == "struct":
        _enforce_struct(table, data, path, report)
    elif kind == "array":
        _enforce_type(table["elementType"], data["elementType"], path + (ELEMENT,), report)
    elif kind == "map":
        _enforce_type(table["keyType"], data["keyType"], path + (KEY,), report)
        _enforce_type(table["valueType"], data["valueType"], path + (VALUE,), report)
    elif canonical_primitive(table) != canonical_primitive(data):
        _type_clash(path, table, data, report)


def _type_clash(path: FieldPath, table: DeltaType, data: DeltaType, report: _Report) -> None:
    """A type the data brings for a table column, with the fixes that fit:
    schema evolution when it takes the data's type (widening it, with type
    widening where that is needed), else a cast or replacing the table."""
    col = format_path(path)
    problem = f"column {col}: type {simple_string(data)} in the data, {simple_string(table)} in the table"
    fixes = report.keep_fixes(path, table)
    if report.declared:
        fixes.append(f"declare {col} as {simple_string(data)} in {TABLE_SCHEMA_ARG}")
        report.add(path, problem, fixes)
        return
    merged = _merged_type(table, data, widen=False)
    widened = _merged_type(table, data, widen=True) if merged is None else None
    if merged is not None:
        fixes.insert(0, _evolve_fix(path, table, merged))
    elif widened is not None and report.type_widening:
        fixes.insert(0, f"{_evolve_fix(path, table, widened)} (the table has {ENABLE_TYPE_WIDENING}=true)")
    elif widened is not None:
        fixes.insert(0, f"set the table property {ENABLE_TYPE_WIDENING}=true and {_evolve_fix(path, table, widened)}")
    report.add(path, problem, fixes)


def _merged_type(table: DeltaType, data: DeltaType, *, widen: bool) -> DeltaType | None:
    """The type :func:`merge_schemas` gives a column of type ``table`` for
    data of type ``data`` (with type widening on, if ``widen``); None when it
    refuses."""
    scratch = _Report()
    merged = _merge_type(table, data, (), scratch, widen=widen)
    return None if scratch.problems or scratch.extra else merged


def _require_non_nullable(table: DeltaType, data: DeltaType, path: FieldPath, report: _Report) -> None:
    present = {f["name"].lower() for f in fields_of(data)}
    for tf in fields_of(table):
        if not tf.get("nullable", True) and tf["name"].lower() not in present:
            col = format_path(path + (tf["name"],))
            if report.declared:
                fix = f"add {col} to the source, or declare it nullable in {TABLE_SCHEMA_ARG}"
            else:
                fix = f"add {col} to the source, with a value in every row"
            problem = f"column {col}: missing from the data, but the table column is NOT NULL"
            report.add(path + (tf["name"],), problem, [fix])


# --- Merge (merge_schema) ----------------------------------------------------------------


def merge_schemas(
    table: Mapping[str, Any],
    data: Mapping[str, Any],
    *,
    type_widening: bool = False,
    can_overwrite: bool = False,
    column_mapping: bool = False,
) -> Schema:
    """The table schema after appending data of schema ``data`` with ``merge_schema``.

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
    conflict, or InvalidInputError for duplicate or
    invalid new column names. ``can_overwrite``: the caller's operation can
    replace the table (an APPEND's ``mode="overwrite"``), so a type clash
    hints at that besides a cast. ``column_mapping``: the table maps columns
    (mode ``name`` or ``id``), so new names may hold the characters a table
    without mapping refuses (delta-spark checks them only without mapping);
    duplicates up to case are refused either way.
    """
    check_unique_names(data)
    report = _Report(type_widening=type_widening, can_overwrite=can_overwrite, any_names=column_mapping)
    merged = _merge_struct(table, data, (), report, widen=type_widening)
    if report.problems:
        raise _mismatch("Cannot merge the data schema into the table schema", report)
    return widening.record(table, merged) if type_widening else merged


def _merge_struct(
    table: DeltaType, data: DeltaType, path: FieldPath, report: _Report, *, widen: bool = False
) -> Schema:
    data_fields = {f["name"].lower(): f for f in fields_of(data)}
    merged: list[dict[str, Any]] = []
    for tf in fields_of(table):
        df = data_fields.pop(tf["name"].lower(), None)
        if df is None:
            merged.append(dict(tf))
        else:
            col = path + (tf["name"],)
            merged.append({**tf, "type": _merge_type(tf["type"], df["type"], col, report, widen=widen)})
    for df in data_fields.values():  # dicts keep the data's order
        new = struct_field(df["name"], as_nullable(df["type"]), True, df.get("metadata"))
        if not report.any_names:
            _check_new_names(new, path)
        merged.append(new)
    _require_non_nullable(table, data, path, report)
    return struct_type(merged)


def _check_new_names(field: dict[str, Any], path: FieldPath) -> None:
    try:
        check_column_names(struct_type([field]))
    except InvalidInputError as exc:
        where = f" (inside {format_path(path)})" if path else ""
        raise InvalidInputError(f"cannot add column{where}: {exc}") from None


def _merge_type(
    table: DeltaType, data: DeltaType, path: FieldPath, report: _Report, *, widen: bool = False
) -> DeltaType:
    kind, data_kind = kind_of(table), kind_of(data)
    if kind == data_kind == "struct":
        return _merge_struct(table, data, path, report, widen=widen)
    if kind == data_kind == "array":
        return {
            "type": "array",
            "elementType": _merge_type(
                table["elementType"], data["elementType"], path + (ELEMENT,), report, widen=widen
            ),
            "containsNull": bool(table.get("containsNull", True)),
        }
    if kind == data_kind == "map":
        return {
            "type": "map",
            "keyType": _merge_type(table["keyType"], data["keyType"], path + (KEY,), report, widen=widen),
            "valueType": _merge_type(table["valueType"], data["valueType"], path + (VALUE,), report, widen=widen),
            "valueContainsNull": bool(table.get("valueContainsNull", True)),
        }
    t = canonical_primitive(table) if kind == "primitive" else None
    d = canonical_primitive(data) if data_kind == "primitive" else None
    col = format_path(path)
    if t is not None and d is not None:
        if t == d:
            return table
        if widen and widening.widens_on_merge(t, d):
            return d
        if t in _INTEGRAL_RANK and d in _INTEGRAL_RANK:
            return t if _INTEGRAL_RANK[t] >= _INTEGRAL_RANK[d] else d
        if widening.widens_on_merge(t, d):
            report.add(
                path,
                f"column {col}: cannot widen {t} in the table to {d} in the data: type widening is off",
                [
                    f"set the table property {ENABLE_TYPE_WIDENING}=true to {_widening(path, t, d)}",
                    *report.keep_fixes(path, t),
                ],
            )
            return table
        if widen and widening.is_supported(t, d):
            report.add(
                path,
                f"column {col}: cannot change {t} in the table to {d} in the data: "
                f"{MERGE_SCHEMA_ARG} never turns an integer column into double or decimal",
                report.keep_fixes(path, t),
            )
            return table
        if is_decimal(t) and is_decimal(d):
            report.add(
                path,
                f"column {col}: cannot change {t} to {d} "
                "(a decimal may only widen, keeping its integer digits, with type widening on)",
                report.keep_fixes(path, t),
            )
            return table
    if t == "void":
        return as_nullable(data)
    if d == "void":
        return table
    report.add(
        path,
        f"column {col}: cannot merge type {simple_string(data)} in the data into {simple_string(table)} in the table",
        report.keep_fixes(path, table),
    )
    return table
