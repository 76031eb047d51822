"""What a checkpoint holds, as arrow tables: the rows every checkpoint writer uses.

A checkpoint is the reconciled state of one version (PROTOCOL.md
"Checkpoints"): protocol, metadata, ``txn`` and domain metadata (the
*non-file* actions), the live files and the unexpired tombstones. Rows are
built in delta-spark's style: every column nullable, file actions with
``dataChange=false``, each file's ``deletionVector`` struct as the log has it
(null at the struct level for a file without one, never a struct of nulls),
no ``commitInfo``, and tombstones without ``stats`` and ``tags``. The V2 spec
adds a ``checkpointMetadata`` row and ``sidecar`` rows, and may move the file
actions into sidecar files (:data:`SIDECAR_SCHEMA`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.checkpoint_codec import (
    Overrides,
    checkpoint_row,
    checkpoint_type,
    struct_array,
)
from airflow_delta_provider.delta.actions.model import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    action_to_json,
)
from airflow_delta_provider.delta.checkpoint import parsed_stats
from airflow_delta_provider.delta.log.sidecars import SidecarFile

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

#: The columns of a classic (V1 spec) checkpoint, in delta-spark's order.
CHECKPOINT_SCHEMA = pa.schema(
    [(c.KEY, checkpoint_type(c)) for c in (Txn, AddFile, RemoveFile, Metadata, Protocol, DomainMetadata)]
)

#: A V2 spec checkpoint's own file: the classic columns, ``checkpointMetadata``
#: and ``sidecar`` (delta-spark's ``createCheckpointV2ParquetFile`` order).
V2_CHECKPOINT_SCHEMA = pa.schema(
    [
        *CHECKPOINT_SCHEMA,
        ("checkpointMetadata", pa.struct([("version", pa.int64()), ("tags", pa.map_(pa.string(), pa.string()))])),
        (SidecarFile.KEY, checkpoint_type(SidecarFile)),
    ]
)

#: A sidecar file: the file actions only.
SIDECAR_SCHEMA = pa.schema([CHECKPOINT_SCHEMA.field(AddFile.KEY), CHECKPOINT_SCHEMA.field(RemoveFile.KEY)])

#: What a checkpoint writes for a live file instead of its log values: no data
#: change, and its stats as JSON text (also when only struct stats were read).
_FILE_OVERRIDES: Overrides = {"data_change": lambda _: False, "stats": AddFile.stats_json}
#: Tombstones in a checkpoint: no data change, without ``stats`` and ``tags``.
_TOMBSTONE_OVERRIDES: Overrides = {"data_change": lambda _: False, "stats": lambda _: None, "tags": lambda _: None}


def _non_file(snapshot: Snapshot) -> list[Protocol | Metadata | Txn | DomainMetadata]:
    return [snapshot.protocol, snapshot.metadata, *snapshot.txn_actions, *snapshot.domain_metadata.values()]


def non_file_rows(
    snapshot: Snapshot, schema: pa.Schema = CHECKPOINT_SCHEMA, extra: Iterable[tuple[str, dict[str, Any]]] = ()
) -> pa.Table:
    """One row per non-file action of ``snapshot`` in ``schema``, after the
    ``extra`` (column, value) rows (a V2 checkpoint's ``checkpointMetadata``
    and ``sidecar`` rows)."""
    rows: dict[str, list[Any]] = {name: [] for name in schema.names}

    def push(column: str, value: dict[str, Any]) -> None:
        for name, values in rows.items():
            values.append(value if name == column else None)

    for column, value in extra:
        push(column, value)
    for action in _non_file(snapshot):
        push(action.KEY, checkpoint_row(action))
    columns = {name: pa.array(values, schema.field(name).type) for name, values in rows.items()}
    return pa.table(columns, schema=schema)


def with_stats_columns(schema: pa.Schema, snapshot: Snapshot) -> pa.Schema:
    """``schema`` with its ``add`` struct as the table's properties ask
    (delta-spark's ``Checkpoints.buildCheckpoint``): ``stats`` only with
    ``delta.checkpoint.writeStatsAsJson`` (default true), then
    ``partitionValues_parsed`` (partitioned tables) and ``stats_parsed`` with
    ``delta.checkpoint.writeStatsAsStruct`` (default false, PROTOCOL.md's)."""
    add = schema.field("add").type
    if "stats" not in add.names or "stats_parsed" in add.names:
        return schema  # already as the properties ask (the base schemas hold ``stats`` and no parsed column)
    fields = [f for f in add if f.name != "stats" or table_properties.checkpoint_stats_as_json(snapshot.metadata)]
    if table_properties.checkpoint_stats_as_struct(snapshot.metadata):
        partitions = parsed_stats.partition_values_struct_type(snapshot)
        if partitions is not None:
            fields.append(pa.field("partitionValues_parsed", partitions))
        fields.append(pa.field("stats_parsed", parsed_stats.stats_struct_type(snapshot)))
    if len(fields) == len(add) and all(a.name == b.name for a, b in zip(fields, add)):
        return schema
    return schema.set(schema.get_field_index("add"), pa.field("add", pa.struct(fields)))


def file_rows(snapshot: Snapshot, schema: pa.Schema = CHECKPOINT_SCHEMA) -> pa.Table:
    """The live files, then the unexpired tombstones, one row each, in ``schema``
    (its ``add`` struct as :func:`with_stats_columns` makes it)."""
    schema = with_stats_columns(schema, snapshot)
    adds = _as_add_type(
        struct_array(AddFile, snapshot.files, _FILE_OVERRIDES), snapshot, schema.field(AddFile.KEY).type
    )
    removes = struct_array(RemoveFile, snapshot.tombstones, _TOMBSTONE_OVERRIDES)
    return pa.concat_tables(
        [_single_column_table(schema, AddFile.KEY, adds), _single_column_table(schema, RemoveFile.KEY, removes)]
    )


def checkpoint_table(snapshot: Snapshot) -> pa.Table:
    """The rows of a classic (V1 spec) checkpoint of ``snapshot``."""
    schema = with_stats_columns(CHECKPOINT_SCHEMA, snapshot)
    return pa.concat_tables([non_file_rows(snapshot, schema), file_rows(snapshot, schema)])


def parquet_bytes(data: pa.Table) -> bytes:
    """``data`` as a snappy-compressed parquet file."""
    buf = io.BytesIO()
    pq.write_table(data, buf, compression="snappy")
    return buf.getvalue()


def _single_column_table(schema: pa.Schema, name: str, array: pa.Array) -> pa.Table:
    n = len(array)
    columns = {f.name: array if f.name == name else pa.nulls(n, f.type) for f in schema}
    return pa.table(columns, schema=schema)


def _as_add_type(adds: pa.StructArray, snapshot: Snapshot, add_type: pa.StructType) -> pa.Array:
    """The ``add`` column in ``add_type``'s layout: ``stats`` kept or left out, and the
    parsed columns (``partitionValues_parsed``, ``stats_parsed``) after it, when the
    table's properties ask for them (:func:`with_stats_columns`)."""
    if adds.type == add_type:
        return adds
    files = snapshot.files
    present = {adds.type.field(i).name: adds.field(i) for i in range(adds.type.num_fields)}
    children = []
    for field in add_type:
        if field.name in present:
            children.append(present[field.name])
        elif field.name == "partitionValues_parsed":
            children.append(parsed_stats.partition_values_parsed_array(files, snapshot, field.type))
        else:
            children.append(parsed_stats.stats_parsed_array(files, field.type))
    return pa.StructArray.from_arrays(children, fields=list(add_type))


# --- the same content as JSON actions (a JSON V2 checkpoint, _last_checkpoint) ---


def non_file_actions(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The non-file actions of ``snapshot``, each as a one-key JSON object."""
    return [action_to_json(a) for a in _non_file(snapshot)]


def file_actions(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The live files and unexpired tombstones as checkpoint JSON actions."""
    adds = [_with(f, _FILE_OVERRIDES) for f in snapshot.files]
    removes = [_with(r, _TOMBSTONE_OVERRIDES) for r in snapshot.tombstones]
    actions: list[Action] = [*adds, *removes]
    return [action_to_json(a) for a in actions]


def _with(action: Any, overrides: Overrides) -> Any:
    """``action`` with the checkpoint's ``overrides`` applied, as the parquet rows have them."""
    return replace(action, **{attr: value(action) for attr, value in overrides.items()})
