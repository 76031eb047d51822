"""Writing a table's checkpoint, and pointing ``_last_checkpoint`` at it.

A table that lists the ``v2Checkpoint`` writer feature, with
``delta.checkpointPolicy=v2``, gets V2 checkpoints
(:mod:`.v2`: a UUID-named file and its sidecars); every other table gets
the classic single-file parquet checkpoint (V1 spec), with the rows of
:mod:`.rows`. Only after the checkpoint's files are in
place is ``_last_checkpoint`` replaced, so a torn write is never advertised,
and it never moves back to an older version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.checkpoint.rows import checkpoint_table, parquet_bytes
from airflow_delta_provider.delta.checkpoint.v2 import write_v2_checkpoint
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.store import LogStore, TableLog, checkpoint_name, commit_name
from airflow_delta_provider.delta.table_features.checkpoint_protection import protected_before
from airflow_delta_provider.delta.table_features.v2_checkpoint import writes_v2_checkpoints

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot


def write_checkpoint(table: TableLog, snapshot: Snapshot, *, just_committed: bool = False) -> dict[str, Any]:
    """Write the checkpoint of ``snapshot`` and point ``_last_checkpoint`` at it.

    Its version's commit must exist: checked with one request, unless the
    caller has ``just_committed`` it (the post-commit work).

    Returns the ``_last_checkpoint`` content written (or that would have
    been, when a newer checkpoint is already advertised).
    """
    store = table.log_store
    if not just_committed and not store.exists(commit_name(snapshot.version)):
        raise InvalidInputError(f"cannot checkpoint version {snapshot.version}: its commit is missing")
    protected = protected_before(snapshot.protocol, snapshot.metadata)
    if snapshot.version < protected:
        raise InvalidInputError(
            f"cannot checkpoint version {snapshot.version}: the table protects its history before version "
            f"{protected} (checkpointProtection), and no checkpoint may be written there"
        )
    if writes_v2_checkpoints(snapshot.protocol, snapshot.metadata):
        info = write_v2_checkpoint(store, snapshot)
    else:
        info = _write_classic(store, snapshot)
    hint = store.read_last_checkpoint()
    if hint is None or hint["version"] <= snapshot.version:
        store.write_last_checkpoint(info)
    return info


def _write_classic(store: LogStore, snapshot: Snapshot) -> dict[str, Any]:
    """The classic single-file checkpoint; its ``_last_checkpoint`` content."""
    data = checkpoint_table(snapshot)
    payload = parquet_bytes(data)
    store.write_atomic(checkpoint_name(snapshot.version), payload)
    return {
        "version": snapshot.version,
        "size": data.num_rows,
        "sizeInBytes": len(payload),
        "numOfAddFiles": snapshot.num_files,
    }


__all__ = ["write_checkpoint"]
