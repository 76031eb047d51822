"""Which concurrent metadata changes a transaction may commit over.

delta-spark (4.x, ``ConflictChecker.attemptToResolveMetadataConflicts``)
lets a transaction that changes no metadata commit over a winner whose
metadata differs from the one it read only by turning a feature on, where
no file written before the change breaks it:

- ``delta.enableDeletionVectors`` set to true, the protocol supporting
  deletion vectors (a writer may always choose not to write them);
- column mapping turned from ``none`` to ``name`` (with
  ``delta.columnMapping.maxColumnId`` and the schema's column-mapping field
  metadata), the protocol supporting it: the existing columns' physical
  names are their names, so files written without mapping stay readable.

Anything else (another property, a removed one, any other schema change)
is a conflict. Turning row tracking on is also on delta-spark's list, but
resolving it means re-tagging the commit as not preserving row ids; we do
not, so it stays a conflict here: stricter, never unsafe.
"""

from __future__ import annotations

import json
from typing import Any

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features import features

DELETION_VECTORS_KEY = "delta.enableDeletionVectors"
MAPPING_MODE_KEY = "delta.columnMapping.mode"
MAPPING_MAX_ID_KEY = "delta.columnMapping.maxColumnId"
#: Field metadata keys column mapping sets (delta-spark's COLUMN_MAPPING_METADATA_KEYS).
MAPPING_FIELD_KEYS = frozenset(
    {"delta.columnMapping.id", "delta.columnMapping.physicalName", "delta.columnMapping.nested.ids"}
)


def tolerable(read: Metadata, winner: Metadata, protocol: Protocol) -> bool:
    """Whether a transaction that read ``read`` and changes no metadata may
    commit over ``winner`` (``protocol``: the table's protocol after it)."""
    if (read.id, read.name, read.description, read.format, tuple(read.partition_columns), read.created_time) != (
        winner.id, winner.name, winner.description, winner.format, tuple(winner.partition_columns),
        winner.created_time,
    ):  # fmt: skip
        return False
    before, after = read.configuration, winner.configuration
    if set(before) - set(after):
        return False
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    enables_mapping = before.get(MAPPING_MODE_KEY, "none") == "none" and after.get(MAPPING_MODE_KEY) == "name"
    _, writer_features = features.listed_features(protocol)
    for key, value in changed.items():
        if key == DELETION_VECTORS_KEY:
            ok = value.lower() == "true" and features.DELETION_VECTORS in writer_features
        elif key == MAPPING_MODE_KEY:
            ok = enables_mapping and features.COLUMN_MAPPING in writer_features
        else:
            ok = key == MAPPING_MAX_ID_KEY
        if not ok:
            return False
    if read.schema_string != winner.schema_string:
        return enables_mapping and _only_mapping_metadata_changed(read.schema_json, winner.schema_json)
    return True


def _only_mapping_metadata_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Same top-level fields (name, type, nullability), differing only in column-mapping field metadata."""
    old, new = before.get("fields", []), after.get("fields", [])
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if (a["name"], json.dumps(a["type"], sort_keys=True), a.get("nullable", True)) != (
            b["name"], json.dumps(b["type"], sort_keys=True), b.get("nullable", True),
        ):  # fmt: skip
            return False
        ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
        differing = {k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k)}
        if not differing <= MAPPING_FIELD_KEYS:
            return False
    return True
