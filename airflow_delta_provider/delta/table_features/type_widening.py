"""Type widening (PROTOCOL.md "Type Widening"): the rules for changing a
column's type to a wider one, and the ``delta.typeChanges`` history of them.

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

Schema evolution (``mergeSchema``) applies only a subset on its own
(:func:`widens_on_merge`, delta-spark's
``TypeWidening.isTypeChangeSupportedForSchemaEvolution``): integers are never
turned into ``double`` or ``decimal`` behind the user's back.

Pure functions over Delta schema dicts, like :mod:`.schema`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features.column_mapping import transform_fields
from airflow_delta_provider.delta.errors import CorruptLogError, SchemaMismatchError, UnsupportedTypeChangeError
from airflow_delta_provider.delta.table_features.gate import TYPE_WIDENING_PREVIEW_FEATURE
from airflow_delta_provider.delta.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    DeltaType,
    FieldPath,
    format_path,
    is_decimal,
    parse_decimal,
    schema_string,
    type_name,
    walk_fields,
)

TYPE_CHANGES_KEY = "delta.typeChanges"

_INTEGRAL = ("byte", "short", "integer", "long")
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
    if f in _INTEGRAL and t in _INTEGRAL:
        return _INTEGRAL.index(f) < _INTEGRAL.index(t)
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
    """Whether ``mergeSchema`` may change ``from_type`` to a different
    ``to_type`` when type widening is on: a supported change, except an
    integer becoming ``double`` or ``decimal`` (delta-spark leaves those to
    an explicit ALTER)."""
    if not is_supported(from_type, to_type) or type_name(from_type) == type_name(to_type):
        return False
    return not (type_name(from_type) in _INTEGRAL and type_name(to_type) not in _INTEGRAL)


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
        if not (isinstance(raw, Mapping) and isinstance(raw.get("fromType"), str) and isinstance(raw.get("toType"), str)):
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


def check_readable(schema: Mapping[str, Any]) -> None:
    """PROTOCOL.md's reader requirement: refuse a table whose schema records
    a type change the protocol does not allow (UnsupportedTypeChangeError)."""
    for path, change in all_changes(schema):
        if not is_supported(change.from_type, change.to_type):
            raise UnsupportedTypeChangeError(
                f"column {format_path(path + change.field_path)} records the type change "
                f"{change.from_type} -> {change.to_type}, which type widening does not support"
            )


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


def check_partition_changes(old: Mapping[str, Any], new: Mapping[str, Any], partition_columns: Iterable[str]) -> None:
    """Refuse widening a ``date`` partition column to ``timestamp_ntz``
    (SchemaMismatchError). The partition values of older files stay dates
    (``2024-01-02``), which delta-kernel readers (delta-rs, DuckDB) refuse to
    parse as ``timestamp_ntz``: the table would be unreadable to them. We
    still read such values (as midnight), as delta-spark does."""
    before = {f["name"].lower(): f["type"] for f in old.get("fields", ())}
    after = {f["name"].lower(): (f["name"], f["type"]) for f in new.get("fields", ())}
    for column in partition_columns:
        name, to_type = after[column.lower()]
        from_type = before.get(column.lower())
        if isinstance(from_type, str) and type_name(from_type) == "date" and to_type == "timestamp_ntz":
            raise SchemaMismatchError(
                f"cannot widen partition column {format_path((name,))} from date to timestamp_ntz: the "
                "partition values of its older files are dates, which delta-rs and DuckDB cannot read "
                "as timestamp_ntz"
            )


def strip(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without ``delta.typeChanges``: an incoming frame's columns
    (read from another widened table) bring no history of their own."""

    def drop(f: dict[str, Any]) -> dict[str, Any]:
        metadata = f.get("metadata") or {}
        if TYPE_CHANGES_KEY not in metadata:
            return f
        return {**f, "metadata": {k: v for k, v in metadata.items() if k != TYPE_CHANGES_KEY}}

    return transform_fields(schema, drop)


def stamp_preview_version(
    metadata: Metadata, previous: Metadata | None, protocol: Protocol, version: int
) -> Metadata:
    """``metadata`` as committed at ``version``: on a table whose ``protocol``
    has ``typeWidening-preview``, each type change ``previous`` did not record
    yet carries ``tableVersion = version`` (delta-spark stamps its commit
    attempt, and restamps on retry). Otherwise ``metadata`` itself."""
    if TYPE_WIDENING_PREVIEW_FEATURE not in (protocol.writer_features or ()):
        return metadata
    known = {path: len(changes_of(f, path)) for path, f in walk_fields(previous.schema_json)} if previous else {}
    schema = metadata.schema_json  # a fresh copy: its fields are changed in place
    stamped = False
    for path, field in walk_fields(schema):
        changes = changes_of(field, path)
        kept = known.get(path, 0)
        if all(c.table_version == version for c in changes[kept:]):
            continue
        entries = [c.to_json() for c in changes[:kept]]
        entries += [replace(c, table_version=version).to_json() for c in changes[kept:]]
        field["metadata"] = {**field["metadata"], TYPE_CHANGES_KEY: entries}
        stamped = True
    if not stamped:
        return metadata
    return replace(metadata, schema_string=schema_string(schema))


# --- Reading stats written before a change ------------------------------------------


def stats_type(field: Mapping[str, Any]) -> str:
    """The type to read a top-level primitive column's min/max stats as, when
    older files may hold them in a narrower type: the column's own type when
    every recorded change keeps old bounds exact in it (integers, decimals,
    a date read as midnight), ``float`` for ``float`` -> ``double`` (a float's
    printed bound is only near its value), ``""`` when unsure (skip on null
    counts only). Without recorded changes, the column's type, lower-cased."""
    own = field["type"]
    if not isinstance(own, str):
        return ""
    changes = changes_of(field)
    if not changes:
        return own.lower()
    sources = {type_name(c.from_type) for c in changes if not c.field_path}
    if "float" in sources and type_name(own) == "double":
        return "float" if sources <= {"float"} else ""
    exact = all(s in _INTEGRAL or is_decimal(s) or s == "date" for s in sources)
    return type_name(own) if exact else ""


__all__ = [
    "TYPE_CHANGES_KEY",
    "TypeChange",
    "all_changes",
    "changes_of",
    "check_partition_changes",
    "check_readable",
    "is_supported",
    "record",
    "stamp_preview_version",
    "stats_type",
    "strip",
    "widens_on_merge",
]
