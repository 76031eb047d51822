"""The classic single-file parquet checkpoint writer.

A checkpoint holds the reconciled state of one version: protocol, metadata,
``txn`` and domain metadata, the live files and the unexpired tombstones
(PROTOCOL.md "Checkpoints"). It is written in delta-spark's style: every
column nullable, file actions with ``dataChange=false``, each file's
``deletionVector`` struct as the log has it (null at the struct level for a
file without one, never a struct of nulls), no ``commitInfo``. Only after
the parquet file is in place is ``_last_checkpoint`` replaced, so a torn
write is never advertised.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.delta.actions import AddFile, DeletionVector
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log_store import checkpoint_name, commit_name

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable

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


def _map(d: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return list(d.items()) if d is not None else None


def checkpoint_table(snapshot: Snapshot) -> pa.Table:
    """The checkpoint rows of ``snapshot`` as an arrow table."""
    md, proto = snapshot.metadata, snapshot.protocol
    rows: dict[str, list[Any]] = {name: [] for name in CHECKPOINT_SCHEMA.names}

    def push(column: str, value: dict[str, Any]) -> None:
        for name, values in rows.items():
            values.append(value if name == column else None)

    push("protocol", {
        "minReaderVersion": proto.min_reader_version,
        "minWriterVersion": proto.min_writer_version,
        "readerFeatures": list(proto.reader_features) if proto.reader_features is not None else None,
        "writerFeatures": list(proto.writer_features) if proto.writer_features is not None else None,
    })
    push("metaData", {
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "format": {"provider": md.format.provider, "options": _map(md.format.options)},
        "schemaString": md.schema_string,
        "partitionColumns": list(md.partition_columns),
        "configuration": _map(md.configuration),
        "createdTime": md.created_time,
    })
    for txn in snapshot.txn_actions:
        push("txn", {"appId": txn.app_id, "version": txn.version, "lastUpdated": txn.last_updated})
    for dm in snapshot.domain_metadata.values():
        push("domainMetadata", {"domain": dm.domain, "configuration": dm.configuration, "removed": False})
    head = {name: pa.array(values, CHECKPOINT_SCHEMA.field(name).type) for name, values in rows.items()}
    head_table = pa.table(head, schema=CHECKPOINT_SCHEMA)

    add_part = _single_column_table("add", _add_array(snapshot))
    remove_part = _single_column_table("remove", _remove_array(snapshot))
    return pa.concat_tables([head_table, add_part, remove_part])


def _single_column_table(name: str, array: pa.Array) -> pa.Table:
    n = len(array)
    columns = {
        f.name: array if f.name == name else pa.nulls(n, f.type) for f in CHECKPOINT_SCHEMA
    }
    return pa.table(columns, schema=CHECKPOINT_SCHEMA)


def _add_array(snapshot: Snapshot) -> pa.Array:
    files = snapshot.files
    t = CHECKPOINT_SCHEMA.field("add").type
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
        pa.array([_stats_json(f) for f in files], pa.string()),
    ]
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


def _stats_json(f: AddFile) -> str | None:
    if f.stats is not None:
        return f.stats
    if f.stats_parsed is not None:
        return json.dumps(f.stats_parsed, separators=(",", ":"))
    return None


def write_checkpoint(table: DeltaTable, snapshot: Snapshot) -> dict[str, Any]:
    """Write the checkpoint of ``snapshot`` and point ``_last_checkpoint`` at it.

    Returns the ``_last_checkpoint`` content written.
    """
    store = table.log_store
    if snapshot.protocol.writer_features and "v2Checkpoint" in snapshot.protocol.writer_features:
        raise InvalidInputError("v2 checkpoints are not supported")
    if not store.exists(commit_name(snapshot.version)):
        raise InvalidInputError(f"cannot checkpoint version {snapshot.version}: its commit is missing")
    data = checkpoint_table(snapshot)
    buf = io.BytesIO()
    pq.write_table(data, buf, compression="snappy")
    payload = buf.getvalue()
    store.write_atomic(checkpoint_name(snapshot.version), payload)
    info = {
        "version": snapshot.version,
        "size": data.num_rows,
        "sizeInBytes": len(payload),
        "numOfAddFiles": snapshot.num_files,
    }
    hint = store.read_last_checkpoint()
    if hint is None or hint["version"] <= snapshot.version:
        store.write_last_checkpoint(info)
    return info
