"""Each log action's fields, defined once: their Delta names, JSON reading and checkpoint types.

A log record (an action, or a struct inside one such as a deletion vector)
is a dataclass deriving from :class:`LogRecord` whose fields carry a
:class:`LogField` in their metadata, made with :func:`log`::

    size: int = field(metadata=log("size", pa.int64(), decode=int_or_zero))

That one line gives the name the field has in a commit's JSON and as a
checkpoint column, how a JSON value is read back, and its arrow type, as
delta-kernel-rs derives its schemas with ``#[derive(ToSchema)]``. The JSON
codec here, the checkpoint schema and rows (:mod:`.checkpoint_codec`) and log
replay all read the definition, so adding a field is one edit.

Declaration order is the JSON key order (interop and tests compare written
bytes); a field that comes before a required one in that order is declared
``kw_only`` so the positional constructor keeps its required fields first.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pyarrow as pa

#: Where the :class:`LogField` of a dataclass field is kept in its metadata.
_META_KEY = "delta_log"

_R = TypeVar("_R", bound="LogRecord")


class Checkpoint(enum.Enum):
    """Where a field stands in its action's checkpoint struct column."""

    COLUMN = "column"  # written and read, in declaration order
    LAST = "last"  # written and read, after every other column (delta-spark re-appends ``add.stats``)
    READ = "read"  # read when a checkpoint has it, never written (a tombstone's ``tags``)
    NONE = "none"  # never read from nor written to a checkpoint


@dataclasses.dataclass(frozen=True)
class LogField:
    """How one dataclass field is spelled in the Delta log.

    ``decode`` turns the JSON value (``absent`` when the key is missing,
    unless ``required``) into the Python value; ``to_json`` needs no
    per-field code (tuples become lists, dicts are copied, records nest).
    ``arrow`` is the checkpoint type of a leaf; a ``record`` field's type is
    derived from the nested record's own fields, and it is read with the
    record's ``from_json`` unless ``decode`` says otherwise."""

    name: str
    arrow: pa.DataType | None = None
    record: type[LogRecord] | None = None
    decode: Callable[[Any], Any] | None = None
    absent: Any = None
    required: bool = False
    checkpoint: Checkpoint = Checkpoint.COLUMN
    #: The Python attribute, filled in by :func:`log_fields`.
    attr: str = ""


def log(
    name: str,
    arrow: pa.DataType | None = None,
    *,
    record: type[LogRecord] | None = None,
    decode: Callable[[Any], Any] | None = None,
    absent: Any = None,
    required: bool = False,
    checkpoint: Checkpoint | None = None,
) -> dict[str, LogField]:
    """The ``metadata=`` of a log field. ``checkpoint`` defaults to a column
    when the field has a checkpoint type (``arrow`` or ``record``), else none."""
    if checkpoint is None:
        checkpoint = Checkpoint.NONE if arrow is None and record is None else Checkpoint.COLUMN
    if decode is None and record is not None:
        decode = functools.partial(_nested, record)
    spec = LogField(name, arrow, record, decode, absent, required, checkpoint)
    return {_META_KEY: spec}


class LogRecord:
    """Base of the dataclasses defined with :func:`log` fields: their JSON codec."""

    __slots__ = ()

    @classmethod
    def from_json(cls: type[_R], d: Mapping[str, Any]) -> _R:
        """Read one JSON object; absent keys take the field's ``absent`` value, unknown keys are ignored."""
        make: Callable[..., _R] = cls
        return make(**{attr: value for attr, value in _decoded(cls, d)})

    def to_json(self) -> dict[str, Any]:
        """The JSON object, keys in declaration order; fields that are ``None`` are left out."""
        out: dict[str, Any] = {}
        for f in log_fields(type(self)):
            value = getattr(self, f.attr)
            if value is not None:
                out[f.name] = json_value(value)
        return out


#: Each record class's log fields, worked out once (``functools.cache`` does not type-check on classes).
_FIELDS: dict[type[LogRecord], tuple[LogField, ...]] = {}


def log_fields(cls: type[LogRecord]) -> tuple[LogField, ...]:
    """The log fields of ``cls`` in declaration order (fields without a :func:`log` spec are not in the log)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(
            dataclasses.replace(f.metadata[_META_KEY], attr=f.name)
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if _META_KEY in f.metadata
        )
    return found


def log_name(cls: type[LogRecord], attr: str) -> str:
    """The Delta name of attribute ``attr`` of ``cls`` (``deletion_vector`` → ``deletionVector``)."""
    for f in log_fields(cls):
        if f.attr == attr:
            return f.name
    raise KeyError(f"{cls.__name__} has no log field {attr!r}")


def json_value(value: Any) -> Any:
    """A non-null field value as JSON: records nest, tuples become lists, dicts are copied."""
    if isinstance(value, LogRecord):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _decoded(cls: type[LogRecord], d: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for f in log_fields(cls):
        raw = d[f.name] if f.required else d.get(f.name, f.absent)
        out.append((f.attr, raw if f.decode is None else f.decode(raw)))
    return out


def _nested(record: type[LogRecord], v: Any) -> Any:
    return record.from_json(v or {})


# --- decoders: how a JSON value (None when null or absent) becomes a field value ---


def int_or_zero(v: Any) -> int:
    return int(v or 0)


def or_zero(v: Any) -> Any:
    return v or 0


def or_empty_string(v: Any) -> Any:
    return v or ""


def tuple_or_none(v: Any) -> tuple[Any, ...] | None:
    return tuple(v) if v is not None else None


def tuple_or_empty(v: Any) -> tuple[Any, ...]:
    return tuple(v or ())


def dict_or_empty(v: Any) -> dict[Any, Any]:
    """A map, ``{}`` for null; also takes a checkpoint map's (key, value) pairs."""
    return dict(v or {})


def dict_or_none(v: Any) -> dict[Any, Any] | None:
    return dict(v) if v is not None else None


def dict_if_any(v: Any) -> dict[Any, Any] | None:
    """A map, ``None`` for null or empty (``tags``)."""
    return dict(v) if v else None


def without_null_values(v: Any) -> dict[Any, Any]:
    """A map without its null values (``configuration``); also takes (key, value) pairs."""
    return {k: x for k, x in dict(v or {}).items() if x is not None}


__all__ = [
    "Checkpoint",
    "LogField",
    "LogRecord",
    "dict_if_any",
    "dict_or_empty",
    "dict_or_none",
    "int_or_zero",
    "json_value",
    "log",
    "log_fields",
    "log_name",
    "or_empty_string",
    "or_zero",
    "tuple_or_empty",
    "tuple_or_none",
    "without_null_values",
]
