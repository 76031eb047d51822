"""The V2 checkpoint writer (reader+writer feature ``v2Checkpoint``).

As delta-spark's ``Checkpoints.writeCheckpoint`` does with V2 enabled: the
file actions go to parquet *sidecars* in ``_delta_log/_sidecars`` (at most
:data:`ACTIONS_PER_SIDECAR` rows each, named
``<version>.checkpoint.<part>.<parts>.<uuid>.parquet``), then one UUID-named
file ``<version>.checkpoint.<uuid>.parquet`` (or ``.json``) holds a
``checkpointMetadata``, a ``sidecar`` action per sidecar and the non-file
actions (PROTOCOL.md "V2 Spec"). With ``actions_per_sidecar=0`` the file
actions stay in that file instead, as delta-kernel's single-file V2
checkpoint does. Each file is written whole and only then referred to, so a
reader never meets a checkpoint whose parts are missing. The
``_last_checkpoint`` content returned carries the ``v2Checkpoint`` object
(delta-spark's ``LastCheckpointV2``).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_delta_provider.delta.checkpoint.rows import (
    SIDECAR_SCHEMA,
    V2_CHECKPOINT_SCHEMA,
    file_actions,
    file_rows,
    non_file_actions,
    non_file_rows,
    parquet_bytes,
    with_stats_columns,
)
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.sidecars import SidecarFile, sidecar_action_path, sidecar_name
from airflow_delta_provider.delta.log.store import SIDECAR_DIR, LogStore, v2_checkpoint_name

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

#: File actions per sidecar (delta-spark's part size for V2 checkpoints).
ACTIONS_PER_SIDECAR = 50_000

#: ``_last_checkpoint`` lists the non-file actions and the sidecars only up
#: to this many each (delta-spark's ``lastCheckpoint.*.threshold``).
LAST_CHECKPOINT_LIST_LIMIT = 30

FORMATS = ("parquet", "json")


def write_v2_checkpoint(
    store: LogStore,
    snapshot: Snapshot,
    *,
    file_format: str = "parquet",
    actions_per_sidecar: int = ACTIONS_PER_SIDECAR,
) -> dict[str, Any]:
    """Write the V2 checkpoint of ``snapshot``; its ``_last_checkpoint`` content."""
    if file_format not in FORMATS:
        raise InvalidInputError(f"unknown V2 checkpoint format {file_format!r}; use one of {', '.join(FORMATS)}")
    if actions_per_sidecar < 0:
        raise InvalidInputError(f"actions per sidecar must not be negative, got {actions_per_sidecar}")
    version = snapshot.version
    files = file_rows(snapshot, SIDECAR_SCHEMA)
    sidecars = _write_sidecars(store, version, files, actions_per_sidecar) if actions_per_sidecar else []
    inline = not actions_per_sidecar
    meta = {"version": version}

    name = v2_checkpoint_name(version, str(uuid.uuid4()), file_format)
    if file_format == "parquet":
        extra = [("checkpointMetadata", meta), *(("sidecar", s.to_json()) for s in sidecars)]
        schema = with_stats_columns(V2_CHECKPOINT_SCHEMA, snapshot) if inline else V2_CHECKPOINT_SCHEMA
        top = non_file_rows(snapshot, schema, extra)
        if inline:
            top = pa.concat_tables([top, file_rows(snapshot, V2_CHECKPOINT_SCHEMA)])
        payload, rows = parquet_bytes(top), top.num_rows
    else:
        lines = [{"checkpointMetadata": meta}, *({"sidecar": s.to_json()} for s in sidecars)]
        lines += non_file_actions(snapshot) + (file_actions(snapshot) if inline else [])
        payload = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
        rows = len(lines)
    store.write_atomic(name, payload)

    non_file = [*non_file_actions(snapshot), {"checkpointMetadata": meta}]
    pointer: dict[str, Any] = {"path": name, "sizeInBytes": len(payload), "modificationTime": store.mtime_ms(name)}
    if len(non_file) <= LAST_CHECKPOINT_LIST_LIMIT:
        pointer["nonFileActions"] = non_file
    if len(sidecars) <= LAST_CHECKPOINT_LIST_LIMIT:
        pointer["sidecarFiles"] = [s.to_json() for s in sidecars]
    return {
        "version": version,
        "size": rows + (0 if inline else files.num_rows),
        "sizeInBytes": len(payload) + sum(s.size_in_bytes for s in sidecars),
        "numOfAddFiles": snapshot.num_files,
        "v2Checkpoint": pointer,
    }


def _write_sidecars(store: LogStore, version: int, files: pa.Table, per_sidecar: int) -> list[SidecarFile]:
    """Write ``files`` as sidecars of ``per_sidecar`` rows at most; their actions."""
    parts = -(-files.num_rows // per_sidecar)  # none for a table with no file actions
    out = []
    for part in range(parts):
        payload = parquet_bytes(files.slice(part * per_sidecar, per_sidecar))
        name = sidecar_name(version, part + 1, parts, str(uuid.uuid4()))
        log_name = f"{SIDECAR_DIR}/{name}"
        store.write_atomic(log_name, payload)
        out.append(SidecarFile(sidecar_action_path(name), len(payload), store.mtime_ms(log_name)))
    return out


__all__ = ["ACTIONS_PER_SIDECAR", "FORMATS", "LAST_CHECKPOINT_LIST_LIMIT", "write_v2_checkpoint"]
