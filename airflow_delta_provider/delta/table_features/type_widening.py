"""The ``typeWidening`` table feature (PROTOCOL.md "Type Widening"): what it
asks of readers and writers.

Which type changes exist, and their ``delta.typeChanges`` record, are schema
rules (:mod:`airflow_delta_provider.delta.schema.widening`). Here: refusing a
table that records a change the protocol does not allow, dating the changes
of delta-spark's preview (``typeWidening-preview``) with their commit,
keeping date partition columns readable by other engines, and reading stats
written before a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import SchemaMismatchError, UnsupportedTypeChangeError
from airflow_delta_provider.delta.schema.fields import transform_fields, walk_fields
from airflow_delta_provider.delta.schema.types import format_path, is_decimal, schema_string, type_name
from airflow_delta_provider.delta.schema.widening import (
    INTEGRAL_TYPES,
    TYPE_CHANGES_KEY,
    all_changes,
    changes_of,
    is_supported,
)
from airflow_delta_provider.delta.table_features.features import TYPE_WIDENING_PREVIEW_FEATURE


def is_used(metadata: Metadata) -> bool:
    """``delta.enableTypeWidening`` is on, or the schema records type changes
    (delta-spark's ``actionUsesFeature``): old files may hold narrower types."""
    return table_properties.type_widening_enabled(metadata) or bool(all_changes(metadata.schema_json))


def check_readable(schema: Mapping[str, Any]) -> None:
    """PROTOCOL.md's reader requirement: refuse a table whose schema records
    a type change the protocol does not allow (UnsupportedTypeChangeError)."""
    for path, change in all_changes(schema):
        if not is_supported(change.from_type, change.to_type):
            raise UnsupportedTypeChangeError(
                f"column {format_path(path + change.field_path)} records the type change "
                f"{change.from_type} -> {change.to_type}, which type widening does not support"
            )


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


def stamp_preview_version(metadata: Metadata, previous: Metadata | None, protocol: Protocol, version: int) -> Metadata:
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
    exact = all(s in INTEGRAL_TYPES or is_decimal(s) or s == "date" for s in sources)
    return type_name(own) if exact else ""


__all__ = [
    "check_partition_changes",
    "check_readable",
    "is_used",
    "stamp_preview_version",
    "stats_type",
    "strip",
]
