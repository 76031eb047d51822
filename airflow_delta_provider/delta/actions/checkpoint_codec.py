"""Log records as checkpoint struct columns, derived from their :mod:`.fields` definition.

A checkpoint keeps each action as a struct column named after the action's
key (PROTOCOL.md "Checkpoint Schema"). Its fields are the record's log fields
with a checkpoint type, in declaration order, then the ``LAST`` ones; maps
are (key, value) pairs and nested records nested structs. The checkpoint
writer builds its schema and rows here and log replay reads rows back here,
so both follow the one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_delta_provider.delta.actions.fields import Checkpoint, LogField, LogRecord, log_fields

#: Per attribute, what to write instead of the attribute's value (``dataChange=false`` in a checkpoint).
Overrides = Mapping[str, Callable[[Any], Any]]


def checkpoint_fields(cls: type[LogRecord]) -> tuple[LogField, ...]:
    """The log fields of ``cls`` a checkpoint writes, in column order."""
    fields = log_fields(cls)
    return (
        *(f for f in fields if f.checkpoint is Checkpoint.COLUMN),
        *(f for f in fields if f.checkpoint is Checkpoint.LAST),
    )


def checkpoint_type(cls: type[LogRecord]) -> pa.StructType:
    """The struct type of ``cls`` in a checkpoint."""
    return pa.struct([(f.name, _arrow_type(f)) for f in checkpoint_fields(cls)])


def checkpoint_row(record: LogRecord, overrides: Overrides | None = None) -> dict[str, Any]:
    """``record`` as one value of its checkpoint struct column."""
    return {f.name: _value(_getter(f, overrides)(record)) for f in checkpoint_fields(type(record))}


def struct_array(cls: type[LogRecord], records: Sequence[LogRecord], overrides: Overrides | None = None) -> pa.Array:
    """``records`` as one checkpoint struct column, built column by column."""
    children = [_column(f, [_getter(f, overrides)(r) for r in records]) for f in checkpoint_fields(cls)]
    return pa.StructArray.from_arrays(children, fields=list(checkpoint_type(cls)))


def struct_rows(cls: type[LogRecord], column: pa.Array) -> list[dict[str, Any]]:
    """The rows of a checkpoint struct column of ``cls`` as JSON-like dicts keyed
    by Delta name, ready for ``cls.from_json``: every readable field is a key
    (``None`` where the checkpoint lacks the column); a lacking required field
    is a ``KeyError``. Other struct fields are left out."""
    struct_type: pa.StructType = column.type
    present = {struct_type.field(i).name: i for i in range(struct_type.num_fields)}
    lists: dict[str, list[Any]] = {}
    for f in log_fields(cls):
        if f.checkpoint is Checkpoint.NONE:
            continue
        if f.name in present:
            lists[f.name] = pc.struct_field(column, [present[f.name]]).to_pylist()
        elif f.required:
            raise KeyError(f.name)
        else:
            lists[f.name] = [None] * len(column)
    names = list(lists)
    return [dict(zip(names, values)) for values in zip(*lists.values())]


def _arrow_type(f: LogField) -> pa.DataType:
    return checkpoint_type(f.record) if f.record is not None else f.arrow


def _getter(f: LogField, overrides: Overrides | None) -> Callable[[Any], Any]:
    return (overrides or {}).get(f.attr) or attrgetter(f.attr)


def _column(f: LogField, values: list[Any]) -> pa.Array:
    if f.record is not None and all(v is None for v in values):
        # No file has one: a null struct per row, as delta-spark writes it.
        return pa.nulls(len(values), _arrow_type(f))
    return pa.array([_value(v) for v in values], _arrow_type(f))


def _value(value: Any) -> Any:
    """A field value as pyarrow takes it for the field's checkpoint type."""
    if value is None:
        return None
    if isinstance(value, LogRecord):
        return checkpoint_row(value)
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, tuple):
        return list(value)
    return value


__all__ = ["Overrides", "checkpoint_fields", "checkpoint_row", "checkpoint_type", "struct_array", "struct_rows"]
