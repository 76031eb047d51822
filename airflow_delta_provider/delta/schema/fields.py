"""Finding and walking the fields of a schema: by name, at any depth, as leaves for stats."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from airflow_delta_provider.delta.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    DeltaType,
    FieldPath,
    canonical_primitive,
    fields_of,
    is_primitive,
    kind_of,
)


def column_names(schema: Mapping[str, Any]) -> list[str]:
    """Top-level column names, in order."""
    return [f["name"] for f in fields_of(schema)]


def uses_type(delta_type: DeltaType, name: str) -> bool:
    """Whether the primitive ``name`` occurs anywhere in ``delta_type``: in a
    struct field, an array element, a map key or value, at any depth. Table
    features follow it (a ``timestamp_ntz`` column needs ``timestampNtz``)."""
    kind = kind_of(delta_type)
    if kind == "struct":
        return any(uses_type(f["type"], name) for f in fields_of(delta_type))
    if kind == "array":
        return uses_type(delta_type["elementType"], name)
    if kind == "map":
        return uses_type(delta_type["keyType"], name) or uses_type(delta_type["valueType"], name)
    return canonical_primitive(delta_type) == name


def field_by_name(schema: Mapping[str, Any], name: str, case_insensitive: bool = True) -> dict[str, Any] | None:
    """The top-level field called ``name`` (case-insensitively by default,
    as Delta resolves columns), or None."""
    fields = fields_of(schema)
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
            if limit is not None and not unlimited and len(out) >= limit:
                return
            if not prefix and f["name"].lower() in skip:
                continue
            t, path = f["type"], prefix + (f["name"],)
            if kind_of(t) == "struct":
                walk(fields_of(t), path)
            elif not (is_primitive(t) and canonical_primitive(t) == "void"):
                out.append((path, t))

    walk(fields_of(schema), ())
    return out


def walk_fields(t: DeltaType, prefix: FieldPath = ()) -> Iterable[tuple[FieldPath, dict[str, Any]]]:
    """Every struct field at any depth, with its path (arrays and maps add
    ``element`` / ``key`` / ``value``), parents before children."""
    kind = kind_of(t)
    if kind == "struct":
        for f in fields_of(t):
            path = prefix + (f["name"],)
            yield path, f
            yield from walk_fields(f["type"], path)
    elif kind == "array":
        yield from walk_fields(t["elementType"], prefix + (ELEMENT,))
    elif kind == "map":
        yield from walk_fields(t["keyType"], prefix + (KEY,))
        yield from walk_fields(t["valueType"], prefix + (VALUE,))


def transform_fields(struct: Mapping[str, Any], fn: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """``struct`` with ``fn`` applied to every field, parents before the
    fields nested in them (through structs, arrays and maps)."""
    return {**struct, "fields": [_transform_field(dict(f), fn) for f in struct.get("fields", ())]}


def _transform_field(field: dict[str, Any], fn: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    field = fn(field)
    return {**field, "type": _transform_type(field["type"], fn)}


def _transform_type(t: Any, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    if not isinstance(t, dict):
        return t
    kind = t.get("type")
    if kind == "struct":
        return transform_fields(t, fn)
    if kind == "array":
        return {**t, "elementType": _transform_type(t["elementType"], fn)}
    if kind == "map":
        return {**t, "keyType": _transform_type(t["keyType"], fn), "valueType": _transform_type(t["valueType"], fn)}
    return t


#: Leaf columns that get statistics by default (``delta.dataSkippingNumIndexedCols``).
DEFAULT_NUM_INDEXED_COLS = 32


def stats_leaves(
    schema: Mapping[str, Any],
    partition_columns: Iterable[str] = (),
    configuration: Mapping[str, str] | None = None,
) -> list[tuple[tuple[str, ...], Any]]:
    """The (path, Delta type) of each leaf column that gets statistics.

    Honours ``delta.dataSkippingStatsColumns`` (a comma list of column
    paths) and otherwise ``delta.dataSkippingNumIndexedCols`` (``-1`` = all).
    """
    configuration = configuration or {}
    leaves = leaf_fields(schema, limit=None, exclude=partition_columns)
    chosen = configuration.get("delta.dataSkippingStatsColumns")
    if chosen:
        wanted = [tuple(p.strip().strip("`").lower() for p in c.split(".")) for c in chosen.split(",") if c.strip()]
        return [
            (path, dtype)
            for path, dtype in leaves
            if any(tuple(p.lower() for p in path[: len(w)]) == w for w in wanted)
        ]
    limit = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    return leaves if limit < 0 else leaves[:limit]
