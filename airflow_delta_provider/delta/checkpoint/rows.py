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
from airflow_delta_provider.delta.actions.model import Action, DeletionVector, action_to_json
from airflow_delta_provider.delta.checkpoint import parsed_stats

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

_STR_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

#: The columns of a classic (V1 spec) checkpoint.
CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("tags", _STR_MAP),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                    ("clusteringProvider", pa.string()),
                    ("stats", pa.string()),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        (
            "domainMetadata",
            pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]),
        ),
    ]
)


#: A V2 spec checkpoint's own file: the classic columns, ``checkpointMetadata``
#: and ``sidecar`` (delta-spark's ``createCheckpointV2ParquetFile`` order).
V2_CHECKPOINT_SCHEMA = pa.schema(
    [
        *CHECKPOINT_SCHEMA,
        ("checkpointMetadata", pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])),
        (
            "sidecar",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("sizeInBytes", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("tags", _STR_MAP),
                ]
            ),
        ),
    ]
)

#: A sidecar file: the file actions only.
SIDECAR_SCHEMA = pa.schema([CHECKPOINT_SCHEMA.field("add"), CHECKPOINT_SCHEMA.field("remove")])


def _map(d: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return list(d.items()) if d is not None else None


def non_file_rows(
    snapshot: Snapshot, schema: pa.Schema = CHECKPOINT_SCHEMA, extra: Iterable[tuple[str, dict[str, Any]]] = ()
) -> pa.Table:
    """One row per non-file action of ``snapshot`` in ``schema``, after the
    ``extra`` (column, value) rows (a V2 checkpoint's ``checkpointMetadata``
    and ``sidecar`` rows)."""
    md, proto = snapshot.metadata, snapshot.protocol
    rows: dict[str, list[Any]] = {name: [] for name in schema.names}

    def push(column: str, value: dict[str, Any]) -> None:
        for name, values in rows.items():
            values.append(value if name == column else None)

    for column, value in extra:
        push(column, value)
    push(
        "protocol",
        {
            "minReaderVersion": proto.min_reader_version,
            "minWriterVersion": proto.min_writer_version,
            "readerFeatures": list(proto.reader_features) if proto.reader_features is not None else None,
            "writerFeatures": list(proto.writer_features) if proto.writer_features is not None else None,
        },
    )
    push(
        "metaData",
        {
            "id": md.id,
            "name": md.name,
            "description": md.description,
            "format": {"provider": md.format.provider, "options": _map(md.format.options)},
            "schemaString": md.schema_string,
            "partitionColumns": list(md.partition_columns),
            "configuration": _map(md.configuration),
            "createdTime": md.created_time,
        },
    )
    for txn in snapshot.txn_actions:
        push("txn", {"appId": txn.app_id, "version": txn.version, "lastUpdated": txn.last_updated})
    for dm in snapshot.domain_metadata.values():
        push("domainMetadata", {"domain": dm.domain, "configuration": dm.configuration, "removed": False})
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
    adds = _single_column_table(schema, "add", _add_array(snapshot, schema.field("add").type))
    removes = _single_column_table(schema, "remove", _remove_array(snapshot))
    return pa.concat_tables([adds, removes])


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


def _add_array(snapshot: Snapshot, t: pa.StructType) -> pa.Array:
    files = snapshot.files
    children = [
        pa.array([f.path for f in files], pa.string()),
        pa.array([_map(f.partition_values) for f in files], _STR_MAP),
        pa.array([f.size for f in files], pa.int64()),
        pa.array([f.modification_time for f in files], pa.int64()),
        pa.array([False] * len(files), pa.bool_()),
        pa.array([_map(f.tags) for f in files], _STR_MAP),
        _dv_array([f.deletion_vector for f in files]),
        pa.array([f.base_row_id for f in files], pa.int64()),
        pa.array([f.default_row_commit_version for f in files], pa.int64()),
        pa.array([f.clustering_provider for f in files], pa.string()),
    ]
    names = {f.name for f in t}
    if "stats" in names:
        children.append(pa.array([f.stats_json() for f in files], pa.string()))
    if "partitionValues_parsed" in names:
        pv_type = t.field("partitionValues_parsed").type
        children.append(parsed_stats.partition_values_parsed_array(files, snapshot, pv_type))
    if "stats_parsed" in names:
        children.append(parsed_stats.stats_parsed_array(files, t.field("stats_parsed").type))
    return pa.StructArray.from_arrays(children, fields=list(t))


def _remove_array(snapshot: Snapshot) -> pa.Array:
    removes = snapshot.tombstones
    t = CHECKPOINT_SCHEMA.field("remove").type
    children = [
        pa.array([r.path for r in removes], pa.string()),
        pa.array([r.deletion_timestamp for r in removes], pa.int64()),
        pa.array([False] * len(removes), pa.bool_()),
        pa.array([r.extended_file_metadata for r in removes], pa.bool_()),
        pa.array([_map(r.partition_values) for r in removes], _STR_MAP),
        pa.array([r.size for r in removes], pa.int64()),
        _dv_array([r.deletion_vector for r in removes]),
        pa.array([r.base_row_id for r in removes], pa.int64()),
        pa.array([r.default_row_commit_version for r in removes], pa.int64()),
    ]
    return pa.StructArray.from_arrays(children, fields=list(t))


def _dv_array(dvs: list[DeletionVector | None]) -> pa.Array:
    """The ``deletionVector`` column: a struct per vector, null where a file has none."""
    if all(dv is None for dv in dvs):
        return pa.nulls(len(dvs), _DV)
    return pa.array([dv.to_json() if dv is not None else None for dv in dvs], _DV)


# --- the same content as JSON actions (a JSON V2 checkpoint, _last_checkpoint) ---


def non_file_actions(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The non-file actions of ``snapshot``, each as a one-key JSON object."""
    actions: list[Action] = [
        snapshot.protocol,
        snapshot.metadata,
        *snapshot.txn_actions,
        *snapshot.domain_metadata.values(),
    ]
    return [action_to_json(a) for a in actions]


def file_actions(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The live files and unexpired tombstones as checkpoint JSON actions."""
    adds = [replace(f, data_change=False, stats=f.stats_json(), stats_parsed=None) for f in snapshot.files]
    removes = [replace(r, data_change=False, stats=None, tags=None) for r in snapshot.tombstones]
    actions: list[Action] = [*adds, *removes]
    return [action_to_json(a) for a in actions]
