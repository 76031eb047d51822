"""The schema a MERGE writes: the table's, or evolved by the source's (``merge_schema``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import SchemaMismatchError
from airflow_delta_provider.delta.schema.evolution import merge_schemas
from airflow_delta_provider.delta.schema.names import check_column_names
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table_features import column_mapping, type_widening
from airflow_delta_provider.operations.merge.clauses import MergeClause

#: Narrower source types a column takes without loss (delta-spark casts them
#: on MERGE); merge_schemas itself widens among byte, short and integer.
_UPCASTS = {"long": {"byte", "short", "integer"}, "double": {"float", "byte", "short", "integer"}}


@dataclass(frozen=True)
class MergeSchema:
    """The Delta schema the MERGE writes, and the metadata that records it
    when schema evolution changed it (None: the table's metadata stands)."""

    schema: dict[str, Any]
    evolved: Metadata | None = None


def merge_schema_of(
    snapshot: Snapshot, source_schema: dict[str, Any], clauses: Sequence[MergeClause], merge_schema: bool
) -> MergeSchema:
    """The schema the MERGE writes: the table's, or with ``merge_schema``
    and a ``*`` clause, the table's merged with the source's (delta-spark's
    schema evolution). Without ``merge_schema``, a ``*`` clause needs a
    source with no column the table lacks, and types that merge into the
    table's without changing them (an int source into a long column)."""
    snap = snapshot
    if not any(c.is_star for c in clauses):
        return MergeSchema(snap.schema)
    previous = snap.metadata
    widen = table_properties.type_widening_enabled(previous)
    merged = merge_schemas(
        snap.schema,
        _fitted(snap.schema, source_schema),
        type_widening=widen,
        column_mapping=column_mapping.mode_of(previous.configuration) != column_mapping.NONE,
    )
    if merged == snap.schema:
        return MergeSchema(snap.schema)
    if not merge_schema:
        raise SchemaMismatchError(
            f"the MERGE source does not fit the table for a * clause: {_differences(snap.schema, merged)}. "
            "Pass merge_schema to change the table's schema, or name the columns to set in the clause"
        )
    type_widening.check_partition_changes(snap.schema, merged, snap.partition_columns)
    if column_mapping.mode_of(previous.configuration) == column_mapping.NONE:
        check_column_names(source_schema)
    evolved = column_mapping.apply(replace(previous, schema_string=schema_string(merged)), previous)
    return MergeSchema(evolved.schema_json, evolved)


def _differences(table: dict[str, Any], merged: dict[str, Any]) -> str:
    """What merging the source changed in the table's schema, top-level column by column."""
    old = {f["name"]: f["type"] for f in table["fields"]}
    out = []
    for f in merged["fields"]:
        if f["name"] not in old:
            out.append(f"new column {f['name']}")
        elif f["type"] != old[f["name"]]:
            before, after = _type_text(old[f["name"]]), _type_text(f["type"])
            nested = " (its nested fields differ)" if before == after else ""
            out.append(f"column {f['name']} of type {before} would become {after}{nested}")
    return "; ".join(out)


def _type_text(delta_type: Any) -> str:
    return delta_type if isinstance(delta_type, str) else str(delta_type.get("type", "?"))


def _fitted(table: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """``source`` with each top-level column the table has at a wider type
    (an int into a long) given the table's type: the clauses cast it."""
    types = {f["name"].lower(): f["type"] for f in table["fields"]}
    fields = []
    for f in source["fields"]:
        wanted = types.get(f["name"].lower())
        if isinstance(wanted, str) and isinstance(f["type"], str) and f["type"] in _UPCASTS.get(wanted, ()):
            f = {**f, "type": wanted}
        fields.append(f)
    return {**source, "fields": fields}


__all__ = ["MergeSchema", "merge_schema_of"]
