"""Column mapping (PROTOCOL.md "Column Mapping"): logical names in the schema,
physical names (and, in ``id`` mode, field ids) in data files, stats and
partition values.

With ``delta.columnMapping.mode`` set to ``name`` or ``id``, every field of
the schema, nested struct fields included, carries two metadata entries:
``delta.columnMapping.id`` (an int unique in the table, never reused; the
highest is ``delta.columnMapping.maxColumnId``) and
``delta.columnMapping.physicalName``. Readers and writers use the physical
name wherever the table's data is stored:

- parquet column names (``id`` mode: parquet field ids as well, and readers
  match columns by id);
- the keys of ``add.partitionValues`` and of the stats JSON.

The schema and everything a user writes (conditions, SET expressions,
partition columns in ``metaData``) keep logical names, so RENAME COLUMN and
DROP COLUMN are metadata-only commits.

:class:`ColumnMapping` is the one place that translates; everything here is
pure metadata work, with no engine.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.schema.fields import transform_fields, walk_fields
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table_properties import COLUMN_MAPPING_MODE

MODE_KEY = COLUMN_MAPPING_MODE
MAX_ID_KEY = "delta.columnMapping.maxColumnId"
ID_KEY = "delta.columnMapping.id"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
#: Spark's StructField metadata key for a parquet field id (read and write).
PARQUET_FIELD_ID_KEY = "parquet.field.id"

NONE, NAME, ID = "none", "name", "id"
MODES = (NONE, NAME, ID)

FieldPath = tuple[str, ...]


def mode_of(configuration: Mapping[str, str] | None) -> str:
    """The table's mapping mode, from its ``configuration``: none, name or id."""
    mode = (configuration or {}).get(MODE_KEY, NONE).strip().lower()
    if mode not in MODES:
        raise UnsupportedFeatureError(
            f"{MODE_KEY}={mode!r} is not a column mapping mode; expected one of {', '.join(MODES)}"
        )
    return mode


def physical_name_of(field: Mapping[str, Any], mode: str) -> str:
    """The name ``field`` has in data files under ``mode``."""
    if mode == NONE:
        return field["name"]
    physical = (field.get("metadata") or {}).get(PHYSICAL_NAME_KEY)
    if not physical:
        raise InvalidInputError(
            f"column {field['name']!r} has no {PHYSICAL_NAME_KEY} although {MODE_KEY}={mode}: the schema is damaged"
        )
    return physical


def logical_names(schema: Mapping[str, Any]) -> dict[str, str]:
    """``{physical name: logical path}`` of every field that has a physical
    name in its metadata (nested ones as dotted paths); empty without mapping."""
    out: dict[str, str] = {}
    for path, field in walk_fields(schema, ()):
        physical = (field.get("metadata") or {}).get(PHYSICAL_NAME_KEY)
        if physical and physical != field["name"]:
            out[str(physical)] = ".".join(path)
    return out


#: delta-spark's physical names (``col-`` and a UUID), also cut short at a
#: hyphen, as Spark's parser shows an unquoted one (``col-173b4db9-b5ad``).
_PHYSICAL_NAME = re.compile(r"col-[0-9a-fA-F]{1,8}(?:-[0-9a-fA-F]{1,12}){0,4}")


def with_logical_names(text: str, names: Mapping[str, str] | None) -> str:
    """``text`` with each physical column name in it followed by its logical
    name (``col-1a2b... (column 'Super Name')``): a name ``names`` (from
    :func:`logical_names`) holds, or begins with, uniquely. A physical name
    without a known logical one is said to be one, so a message never shows
    a bare ``col-<uuid>``."""
    known = names or {}

    def name(match: re.Match[str]) -> str:
        found = match.group(0)
        logical = known.get(found)
        if logical is None:
            candidates = {v for k, v in known.items() if k.startswith(found)}
            logical = candidates.pop() if len(candidates) == 1 else None
        if logical is None:
            return f"{found} (a physical column name of column mapping)"
        return f"{found} (column {logical!r})"

    return _PHYSICAL_NAME.sub(name, text)


def field_id_of(field: Mapping[str, Any]) -> int | None:
    value = (field.get("metadata") or {}).get(ID_KEY)
    return int(value) if value is not None else None


@dataclass(frozen=True)
class ColumnMapping:
    """How one table version maps its logical schema onto its data files."""

    mode: str
    schema: Mapping[str, Any]

    @classmethod
    def of(cls, schema: Mapping[str, Any], configuration: Mapping[str, str] | None) -> ColumnMapping:
        return cls(mode_of(configuration), schema)

    @property
    def enabled(self) -> bool:
        return self.mode != NONE

    def physical_schema(self, *, for_write: bool = False) -> dict[str, Any]:
        """The schema as data files hold it: physical names at every level,
        with each field's id as ``parquet.field.id`` metadata (what Spark's
        parquet reader and writer use) where ids matter. Without mapping, the
        schema itself.

        Writers put field ids in the files in both modes, as the protocol
        and delta-spark do (``for_write``); readers match by id in ``id``
        mode only, since files written before mapping was turned on (``name``
        mode) have none."""
        if not self.enabled:
            return copy.deepcopy(dict(self.schema))
        return _map_struct(self.schema, self.mode, with_ids=for_write or self.mode == ID)

    def physical_column(self, name: str) -> str:
        """The physical name of top-level column ``name`` (case-insensitive)."""
        return self.physical_path((name,))[0]

    def physical_path(self, path: Iterable[str]) -> FieldPath:
        """The physical path of a (case-insensitive) logical column path
        through nested structs."""
        path = tuple(path)
        if not self.enabled:
            return path
        out: list[str] = []
        fields = self.schema.get("fields", ())
        for i, part in enumerate(path):
            field = _find(fields, part)
            if field is None:
                raise InvalidInputError(f"column {'.'.join(path)!r} is not in the table schema")
            out.append(physical_name_of(field, self.mode))
            t = field["type"]
            fields = t.get("fields", ()) if isinstance(t, dict) and t.get("type") == "struct" else ()
            if not fields and i < len(path) - 1:
                raise InvalidInputError(f"column {'.'.join(path)!r} is not in the table schema")
        return tuple(out)

    def partition_keys(self, partition_columns: Iterable[str]) -> dict[str, str]:
        """Logical partition column -> its key in ``add.partitionValues``."""
        return {c: self.physical_column(c) for c in partition_columns}

    def logical_partition_values(
        self, values: Mapping[str, str | None], partition_columns: Iterable[str]
    ) -> dict[str, str | None]:
        """``add.partitionValues`` (physical keys) keyed by logical column names."""
        if not self.enabled:
            return dict(values)
        return {c: values.get(key) for c, key in self.partition_keys(partition_columns).items()}

    def physical_partition_values(self, values: Mapping[str, str | None]) -> dict[str, str | None]:
        """Logical-keyed partition values as ``add.partitionValues`` spells them."""
        if not self.enabled:
            return dict(values)
        return {self.physical_column(c): v for c, v in values.items()}


def _find(fields: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    exact = next((f for f in fields if f["name"] == name), None)
    return exact or next((f for f in fields if f["name"].lower() == name.lower()), None)


def _map_struct(struct: Mapping[str, Any], mode: str, *, with_ids: bool) -> dict[str, Any]:
    def to_physical(f: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(f.get("metadata") or {})
        if with_ids:
            fid = field_id_of(f)
            if fid is None:
                raise InvalidInputError(f"column {f['name']!r} has no {ID_KEY} although {MODE_KEY}={mode}")
            metadata[PARQUET_FIELD_ID_KEY] = fid
        return {**f, "name": physical_name_of(f, mode), "metadata": metadata}

    return transform_fields(struct, to_physical)


# --- Assigning ids and physical names ---------------------------------------------------


def max_column_id(schema: Mapping[str, Any], configuration: Mapping[str, str] | None) -> int:
    """The highest id ever given in the table: ``maxColumnId``, or the schema's
    own highest id if that is larger (a damaged or hand-made property)."""
    declared = int((configuration or {}).get(MAX_ID_KEY, 0) or 0)
    return max([declared, *(field_id_of(f) or 0 for _, f in walk_fields(schema))])


def assign(
    schema: Mapping[str, Any],
    configuration: Mapping[str, str] | None,
    *,
    physical_names_from_logical: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``schema`` with an id and a physical name for every field that lacks
    them, and the configuration with the new ``maxColumnId``.

    New fields get ``col-<uuid>`` physical names, as delta-spark gives them,
    so a dropped column's name can be reused without reading its old data.
    ``physical_names_from_logical`` keeps each existing name as its physical
    name: the rule when mapping is turned on for a table whose files already
    use the logical names.
    """
    configuration = dict(configuration or {})
    counter = [max_column_id(schema, configuration)]

    def give(f: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(f.get("metadata") or {})
        if metadata.get(ID_KEY) is None:
            counter[0] += 1
            metadata[ID_KEY] = counter[0]
        if not metadata.get(PHYSICAL_NAME_KEY):
            metadata[PHYSICAL_NAME_KEY] = f["name"] if physical_names_from_logical else f"col-{uuid.uuid4()}"
        return {**f, "metadata": metadata}

    mapped = transform_fields(schema, give)
    configuration[MAX_ID_KEY] = str(counter[0])
    return mapped, configuration


def strip(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without column mapping metadata: what a new column of an
    incoming frame looks like before :func:`assign` (a source frame read from
    a mapped table carries its own ids, which mean nothing here)."""

    def drop(f: dict[str, Any]) -> dict[str, Any]:
        metadata = {
            k: v
            for k, v in (f.get("metadata") or {}).items()
            if k != PARQUET_FIELD_ID_KEY and not k.startswith("delta.columnMapping.")
        }
        return {**f, "metadata": metadata}

    return transform_fields(schema, drop)


def check_transition(previous: Metadata | None, new: Metadata) -> None:
    """Refuse a mode change delta-spark refuses: on an existing table only
    ``none`` to ``name`` is possible without rewriting data (``id`` is for
    new tables, and leaving mapping would orphan the physical names)."""
    if previous is None:
        return
    old, now = mode_of(previous.configuration), mode_of(new.configuration)
    if old == now or (old == NONE and now == NAME):
        return
    raise UnsupportedFeatureError(
        f"cannot change {MODE_KEY} from {old} to {now} on an existing table: only none to name is "
        f"possible (id mode is set when a table is created)"
    )


def apply(metadata: Metadata, previous: Metadata | None) -> Metadata:
    """``metadata`` with column mapping ids and physical names on every field
    that needs them (new columns of an APPEND with merge_schema, every column
    of a new mapped table), and ``maxColumnId`` raised to match.

    When mapping is turned on for an existing table, its columns keep their
    names as physical names, since its files already use them."""
    check_transition(previous, metadata)
    mode = mode_of(metadata.configuration)
    if mode == NONE:
        return metadata
    turning_on = previous is not None and mode_of(previous.configuration) == NONE
    schema, configuration = assign(metadata.schema_json, metadata.configuration, physical_names_from_logical=turning_on)
    if schema == metadata.schema_json and configuration == metadata.configuration:
        return metadata
    return replace(metadata, schema_string=schema_string(schema), configuration=configuration)


def check_mapping(schema: Mapping[str, Any], configuration: Mapping[str, str] | None) -> None:
    """Refuse a mapped schema whose ids or physical names are missing or
    repeated, or above ``maxColumnId``: such a table cannot be read right."""
    mode = mode_of(configuration)
    if mode == NONE:
        return
    declared = (configuration or {}).get(MAX_ID_KEY)
    seen_ids: dict[int, str] = {}
    for path, field in walk_fields(schema):
        name = ".".join(path)
        fid = field_id_of(field)
        physical = (field.get("metadata") or {}).get(PHYSICAL_NAME_KEY)
        if fid is None or not physical:
            raise InvalidInputError(f"column {name!r} lacks a column mapping id or physical name ({MODE_KEY}={mode})")
        if fid in seen_ids:
            raise InvalidInputError(f"columns {seen_ids[fid]!r} and {name!r} share column mapping id {fid}")
        seen_ids[fid] = name
        if declared is not None and fid > int(declared):
            raise InvalidInputError(f"column {name!r} has id {fid}, above {MAX_ID_KEY}={declared}")
    _check_sibling_physical_names(schema)


def _check_sibling_physical_names(schema: Mapping[str, Any]) -> None:
    """Fields of one struct must differ in physical name (case-insensitively)."""
    seen: dict[tuple[FieldPath, str], FieldPath] = {}
    for path, f in walk_fields(schema):
        key = (path[:-1], f["metadata"][PHYSICAL_NAME_KEY].lower())
        if key in seen:
            raise InvalidInputError(
                f"columns {'.'.join(seen[key])!r} and {'.'.join(path)!r} share the physical name {key[1]!r}"
            )
        seen[key] = path


__all__ = [
    "ID",
    "ID_KEY",
    "MAX_ID_KEY",
    "MODES",
    "MODE_KEY",
    "NAME",
    "NONE",
    "PARQUET_FIELD_ID_KEY",
    "PHYSICAL_NAME_KEY",
    "ColumnMapping",
    "apply",
    "assign",
    "check_mapping",
    "check_transition",
    "field_id_of",
    "logical_names",
    "max_column_id",
    "mode_of",
    "physical_name_of",
    "strip",
    "with_logical_names",
]
