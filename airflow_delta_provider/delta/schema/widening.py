"""Type changes: which changes of a column's type are widenings, and the
``delta.typeChanges`` record of those applied (PROTOCOL.md "Type Widening").

A widened column keeps its old data files: they hold the narrower type, and
readers convert their values to the table's type. So the protocol fixes
which changes exist (:func:`is_supported`), and writers record every change
they apply in the ``metadata`` of the nearest struct field::

    "delta.typeChanges": [{"fromType": "integer", "toType": "long"},
                          {"fromType": "float", "toType": "double", "fieldPath": "element"}]

``fieldPath`` leads from that field into arrays (``element``) and maps
(``key``, ``value``). Tables of delta-spark's preview (feature
``typeWidening-preview``) also carry ``tableVersion``, the commit that made
the change.

Schema evolution (``merge_schema``, :mod:`.evolution`) applies only a subset
on its own (:func:`widens_on_merge`, delta-spark's
``TypeWidening.isTypeChangeSupportedForSchemaEvolution``): integers are never
turned into ``double`` or ``decimal`` behind the user's back. What the
``typeWidening`` table feature asks of readers and writers is
:mod:`airflow_delta_provider.delta.table_features.type_widening`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.errors import CorruptLogError
from airflow_delta_provider.delta.schema.fields import walk_fields
from airflow_delta_provider.delta.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    DeltaType,
    FieldPath,
    format_path,
    is_decimal,
    parse_decimal,
    type_name,
)

TYPE_CHANGES_KEY = "delta.typeChanges"

#: The integral types, narrowest first.
INTEGRAL_TYPES = ("byte", "short", "integer", "long")
_INT32 = ("byte", "short", "integer")  # all INT32 in parquet
#: The narrowest decimal (precision, scale) holding every INT32, and every INT64.
_INT32_DECIMAL, _INT64_DECIMAL = (10, 0), (20, 0)


# --- The rules ---------------------------------------------------------------------


def is_supported(from_type: DeltaType, to_type: DeltaType) -> bool:
    """Whether PROTOCOL.md allows changing primitive ``from_type`` to
    ``to_type`` (equal types count as allowed):

    - ``byte`` -> ``short`` -> ``integer`` -> ``long``; ``float`` -> ``double``;
      ``byte``, ``short``, ``integer`` -> ``double``; ``date`` -> ``timestamp_ntz``;
    - ``decimal(p, s)`` -> ``decimal(p + k1, s + k2)`` with ``k1 >= k2 >= 0``
      (the integer digits never shrink), and ``byte``/``short``/``integer``
      as ``decimal(10, 0)``, ``long`` as ``decimal(20, 0)`` likewise.
    """
    if not (isinstance(from_type, str) and isinstance(to_type, str)):
        return False
    f, t = type_name(from_type), type_name(to_type)
    if f == t:
        return True
    if f in INTEGRAL_TYPES and t in INTEGRAL_TYPES:
        return INTEGRAL_TYPES.index(f) < INTEGRAL_TYPES.index(t)
    if (f, t) in (("float", "double"), ("date", "timestamp_ntz")) or (f in _INT32 and t == "double"):
        return True
    if is_decimal(t):
        if is_decimal(f):
            return _decimal_widens(parse_decimal(f), parse_decimal(t))
        if f in _INT32:
            return _decimal_widens(_INT32_DECIMAL, parse_decimal(t))
        if f == "long":
            return _decimal_widens(_INT64_DECIMAL, parse_decimal(t))
    return False


def _decimal_widens(source: tuple[int, int], target: tuple[int, int]) -> bool:
    k1, k2 = target[0] - source[0], target[1] - source[1]
    return k1 >= k2 >= 0


def widens_on_merge(from_type: DeltaType, to_type: DeltaType) -> bool:
    """Whether ``merge_schema`` may change ``from_type`` to a different
    ``to_type`` when type widening is on: a supported change, except an
    integer becoming ``double`` or ``decimal`` (delta-spark leaves those to
    an explicit ALTER)."""
    if not is_supported(from_type, to_type) or type_name(from_type) == type_name(to_type):
        return False
    return not (type_name(from_type) in INTEGRAL_TYPES and type_name(to_type) not in INTEGRAL_TYPES)


# --- The recorded history ------------------------------------------------------------


@dataclass(frozen=True)
class TypeChange:
    """One entry of ``delta.typeChanges``."""

    from_type: str
    to_type: str
    field_path: FieldPath = ()
    table_version: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as delta-spark writes it (``TypeChange.toMetadata``)."""
        out: dict[str, Any] = {} if self.table_version is None else {"tableVersion": self.table_version}
        out.update({"fromType": self.from_type, "toType": self.to_type})
        if self.field_path:
            out["fieldPath"] = ".".join(self.field_path)
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str) -> TypeChange:
        if not (
            isinstance(raw, Mapping) and isinstance(raw.get("fromType"), str) and isinstance(raw.get("toType"), str)
        ):
            raise CorruptLogError(f"column {where}: malformed {TYPE_CHANGES_KEY} entry {raw!r}")
        path = raw.get("fieldPath")
        version = raw.get("tableVersion")
        return cls(raw["fromType"], raw["toType"], tuple(path.split(".")) if path else (), version)


def changes_of(field: Mapping[str, Any], path: FieldPath = ()) -> list[TypeChange]:
    """The type changes recorded on one struct field (oldest first)."""
    raw = (field.get("metadata") or {}).get(TYPE_CHANGES_KEY)
    if raw is None:
        return []
    where = format_path(path or (field.get("name", "?"),))
    if not isinstance(raw, list):
        raise CorruptLogError(f"column {where}: {TYPE_CHANGES_KEY} is not a list")
    return [TypeChange.from_json(entry, where) for entry in raw]


def all_changes(schema: Mapping[str, Any]) -> list[tuple[FieldPath, TypeChange]]:
    """Every recorded type change, with the path of the field holding it."""
    return [(path, change) for path, f in walk_fields(schema) for change in changes_of(f, path)]


def record(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` (a schema evolved from ``old``) with each primitive type change
    appended to the ``delta.typeChanges`` of its nearest struct field, as
    delta-spark's ``TypeWideningMetadata.addTypeWideningMetadata`` does.
    Fields are matched by exact name; new fields get nothing."""
    return _record_struct(old, new)


def _record_struct(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    before = {f["name"]: f for f in old.get("fields", ())}
    fields = []
    for field in new.get("fields", ()):
        previous = before.get(field["name"])
        if previous is None:
            fields.append(field)
            continue
        field = {**field, "type": _record_type(previous["type"], field["type"])}
        changes = _collect(previous["type"], field["type"], ())
        if changes:
            metadata = dict(field.get("metadata") or {})
            metadata[TYPE_CHANGES_KEY] = [*metadata.get(TYPE_CHANGES_KEY, []), *(c.to_json() for c in changes)]
            field["metadata"] = metadata
        fields.append(field)
    return {**new, "fields": fields}


def _record_type(old: DeltaType, new: DeltaType) -> DeltaType:
    """``new`` with struct fields nested anywhere in it recorded against ``old``."""
    kind = type_name(new)
    if kind != type_name(old) or kind not in ("struct", "array", "map"):
        return new
    if kind == "struct":
        return _record_struct(old, new)
    if kind == "array":
        return {**new, "elementType": _record_type(old["elementType"], new["elementType"])}
    return {
        **new,
        "keyType": _record_type(old["keyType"], new["keyType"]),
        "valueType": _record_type(old["valueType"], new["valueType"]),
    }


def _collect(old: DeltaType, new: DeltaType, path: FieldPath) -> list[TypeChange]:
    """Primitive changes between ``old`` and ``new`` through arrays and maps
    (not structs: their fields record their own)."""
    kind = type_name(new)
    if kind == "array" and type_name(old) == "array":
        return _collect(old["elementType"], new["elementType"], path + (ELEMENT,))
    if kind == "map" and type_name(old) == "map":
        return _collect(old["keyType"], new["keyType"], path + (KEY,)) + _collect(
            old["valueType"], new["valueType"], path + (VALUE,)
        )
    if isinstance(old, str) and isinstance(new, str) and type_name(old) != kind and is_supported(old, new):
        return [TypeChange(type_name(old), kind, path)]
    return []
