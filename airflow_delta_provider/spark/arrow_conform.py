"""Arrow arrays read from a data file, made exactly the type Spark expects.

A Python data source must yield batches whose Arrow schema equals the one
Spark derives from the declared schema (``to_arrow_schema``): same names,
types and nullability. Files differ from it the way Spark's own parquet
reader tolerates: columns are matched case-insensitively, a column or struct
field a file lacks reads as null (a file written before the schema grew),
integers and decimals widen, timestamps of any unit become microseconds.

Pure pyarrow: this runs in the executors' Python workers.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def constant(value: object, target: pa.DataType, length: int) -> pa.Array:
    """An array of ``length`` copies of ``value`` (None: nulls) of type ``target``."""
    if value is None:
        return pa.nulls(length, target)
    return pa.repeat(pa.scalar(value, type=target), length)


__all__ = ["conform_array", "constant", "match_columns"]
