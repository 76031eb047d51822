"""Arrow arrays read from a data file, made exactly the type Spark expects.

A Python data source must yield batches whose Arrow schema equals the one
Spark derives from the declared schema (``to_arrow_schema``): same names,
types and nullability. Files differ from it the way Spark's own parquet
reader tolerates: columns are matched case-insensitively, a column or struct
field a file lacks reads as null (a file written before the schema grew),
numbers widen and dates become ``timestamp_ntz`` (a file written before a
type change, see :mod:`airflow_delta_provider.delta.table_features.type_widening`),
timestamps of any unit become microseconds.

Pure pyarrow: this runs in the executors' Python workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def match_columns(file_names: Sequence[str], wanted: Sequence[str]) -> list[str | None]:
    """For each wanted column, the file's column holding it (exact name first,
    then case-insensitive, as Spark matches by default), or None."""
    exact = set(file_names)
    lowered: dict[str, str] = {}
    for name in file_names:
        lowered.setdefault(name.lower(), name)
    return [w if w in exact else lowered.get(w.lower()) for w in wanted]


#: The Arrow field metadata key under which pyarrow reads a parquet field id.
FIELD_ID = b"PARQUET:field_id"
#: The Delta (Spark) field metadata key holding the field id a reader wants.
_WANTED_ID = "parquet.field.id"


def field_id(field: pa.Field) -> int | None:
    """The parquet field id pyarrow read for ``field``, if any."""
    raw = (field.metadata or {}).get(FIELD_ID)
    return int(raw) if raw is not None else None


def wanted_id(delta_field: Mapping[str, Any]) -> int | None:
    """The field id a column mapping ``id``-mode reader matches ``delta_field`` by."""
    value = (delta_field.get("metadata") or {}).get(_WANTED_ID)
    return int(value) if value is not None else None


def relabel_by_field_id(array: pa.Array, delta_type: object) -> pa.Array:
    """``array`` with its nested struct fields renamed after the fields of
    ``delta_type`` (Delta schema JSON) that carry the same field ids, so that
    :func:`conform_array`, which matches by name, finds them. Column mapping
    ``id`` mode: a file's names may differ from the table's physical names
    (an Iceberg conversion, say); its ids do not. Only names change, so the
    data is not copied."""
    relabelled = _relabelled(array.type, delta_type)
    return array if relabelled.equals(array.type) else array.view(relabelled)


def _relabelled(t: pa.DataType, delta_type: object) -> pa.DataType:
    if not isinstance(delta_type, dict):
        return t
    kind = delta_type.get("type")
    if kind == "struct" and pa.types.is_struct(t):
        by_id = {wanted_id(f): f for f in delta_type.get("fields", ()) if wanted_id(f) is not None}
        children = []
        for i in range(t.num_fields):
            child = t.field(i)
            target = by_id.get(field_id(child))
            if target is not None:
                child = child.with_name(target["name"]).with_type(_relabelled(child.type, target["type"]))
            children.append(child)
        return pa.struct(children)
    if kind == "array" and _is_list(t):
        value = t.value_field.with_type(_relabelled(t.value_type, delta_type["elementType"]))
        return pa.large_list(value) if pa.types.is_large_list(t) else pa.list_(value)
    if kind == "map" and pa.types.is_map(t):
        key = t.key_field.with_type(_relabelled(t.key_type, delta_type["keyType"]))
        item = t.item_field.with_type(_relabelled(t.item_type, delta_type["valueType"]))
        return pa.map_(key, item)
    return t


def conform_array(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` as an array of exactly ``target`` (nested names and nullability included)."""
    source = array.type
    if source.equals(target):
        return array
    if pa.types.is_dictionary(source):
        return conform_array(array.dictionary_decode(), target)
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(source):
        names = [source.field(i).name for i in range(source.num_fields)]
        found = match_columns(names, [target.field(i).name for i in range(target.num_fields)])
        children = [
            pa.nulls(len(array), target.field(i).type)
            if name is None
            else conform_array(array.field(names.index(name)), target.field(i).type)
            for i, name in enumerate(found)
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(source):
        offsets, (keys, items) = _rebased(array, array.keys, array.items)
        return pa.MapArray.from_arrays(
            offsets,
            conform_array(keys, target.key_type),
            conform_array(items, target.item_type),
            type=target,
            mask=mask,
        )
    if _is_list(target) and _is_list(source):
        offsets, (values,) = _rebased(array, array.values)
        list_type = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return list_type.from_arrays(offsets, conform_array(values, target.value_type), type=target, mask=mask)
    if pa.types.is_timestamp(target):
        # Nanosecond (INT96) or millisecond files: microseconds, as Spark reads them.
        return pc.cast(array, target, safe=False)
    return pc.cast(array, target)


def _rebased(array: pa.Array, *children: pa.Array) -> tuple[pa.Array, list[pa.Array]]:
    """Offsets starting at 0 and the children they index. A (sliced) list or
    map's own offsets index its whole children, and pyarrow rebuilds a list
    with a null mask only from offsets that start at 0."""
    offsets = array.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    if first == 0:
        return offsets, [c.slice(0, last) for c in children]
    return pc.subtract(offsets, pa.scalar(first, offsets.type)), [c.slice(first, last - first) for c in children]


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def fill_hidden_nulls(array: pa.Array) -> pa.Array:
    """``array`` with the nulls that NOT NULL binary fields hold under a null
    struct (at any depth) made empty bytes.

    Spark's Arrow form of a null variant is a null struct whose ``value`` and
    ``metadata``, both NOT NULL, are null too. A parquet writer refuses a null
    in a required column even where the parent is null, though no reader
    sees it. Nulls under a present struct are left for the writer to refuse.
    """
    filled = _filled(array)
    return array if filled is None else filled


def _filled(array: pa.Array) -> pa.Array | None:
    """:func:`fill_hidden_nulls` of ``array``, or None when nothing changes."""
    t = array.type
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(t):
        children = [array.field(i) for i in range(t.num_fields)]
        changed = False
        for i, f in enumerate(t):
            child = _filled(children[i])
            if child is not None:
                children[i], changed = child, True
            hidden = mask is not None and not f.nullable and children[i].null_count
            if hidden and (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)):
                children[i], changed = pc.if_else(mask, pa.scalar(b"", f.type), children[i]), True
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask) if changed else None
    if _is_list(t):
        offsets, (values,) = _rebased(array, array.values)
        values = _filled(values)
        if values is None:
            return None
        list_type = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return list_type.from_arrays(offsets, values, type=t, mask=mask)
    if pa.types.is_map(t):
        offsets, (keys, items) = _rebased(array, array.keys, array.items)
        items = _filled(items)
        return None if items is None else pa.MapArray.from_arrays(offsets, keys, items, type=t, mask=mask)
    return None


def constant(value: object, target: pa.DataType, length: int) -> pa.Array:
    """An array of ``length`` copies of ``value`` (None: nulls) of type ``target``."""
    if value is None:
        return pa.nulls(length, target)
    return pa.repeat(pa.scalar(value, type=target), length)


__all__ = [
    "conform_array",
    "constant",
    "field_id",
    "fill_hidden_nulls",
    "match_columns",
    "relabel_by_field_id",
    "wanted_id",
]
