"""Column-name rules: no duplicates up to case, and no characters a table
without column mapping cannot store (delta-spark ``SchemaUtils.checkFieldNames``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.schema.fields import walk_fields
from airflow_delta_provider.delta.schema.types import FieldPath, format_path

# Characters a column name may not hold without column mapping
# (delta-spark SchemaUtils.checkFieldNames).
INVALID_NAME_CHARS = " ,;{}()\n\t="


def check_column_names(schema: Mapping[str, Any]) -> None:
    """Refuse duplicate names (case-insensitively, at every nesting level)
    and names holding any of `` ,;{}()\\n\\t=``, as delta-spark does for a
    table without column mapping."""
    check_unique_names(schema)
    for path, _ in walk_fields(schema, ()):
        bad = sorted({c for c in path[-1] if c in INVALID_NAME_CHARS})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            raise InvalidInputError(
                f"invalid column name {format_path(path)}: it contains {shown}; "
                f"column names may not contain any of {INVALID_NAME_CHARS!r}"
            )


def check_unique_names(schema: Mapping[str, Any]) -> None:
    """DELTA_DUPLICATE_COLUMNS_FOUND: two paths equal up to case."""
    seen: dict[tuple[str, ...], FieldPath] = {}
    dupes: list[str] = []
    for path, _ in walk_fields(schema, ()):
        key = tuple(p.lower() for p in path)
        if key in seen:
            dupes.append(f"{format_path(seen[key])} and {format_path(path)}")
        else:
            seen[key] = path
    if dupes:
        raise InvalidInputError(f"duplicate column names (case-insensitive): {'; '.join(dupes)}")
