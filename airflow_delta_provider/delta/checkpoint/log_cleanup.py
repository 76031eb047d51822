"""Expired-log cleanup (PROTOCOL.md "Metadata Cleanup").

Commits and checkpoints older than ``delta.logRetentionDuration`` may go, but
only below a checkpoint: the newest complete checkpoint at or below the last
expired commit is kept, with everything after it, so every version from that
checkpoint on can still be reconstructed (delta-rs
``cleanup_expired_logs_for``, delta-spark ``MetadataCleanup``).

On a table with ``checkpointProtection`` (delta-spark adds it when a feature
is dropped), a cleanup that would stop short of
``delta.requireCheckpointProtectionBeforeVersion`` deletes nothing, so the
protected checkpoints that hide the dropped feature's records stay until the
cleanup reaches past them. (Cleanup never writes a checkpoint, and never
deletes one above where it stops: the protocol's exception for such writers.)

On a table with V2 checkpoints, once a checkpoint went, the sidecars in
``_delta_log/_sidecars`` that no remaining checkpoint refers to go too, when
they are older than the retention: a younger one may belong to a checkpoint
being written (delta-spark's ``identifyAndDeleteUnreferencedSidecarFiles``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.errors import CorruptCheckpointError
from airflow_delta_provider.delta.log.checkpoint_reader import sidecar_references
from airflow_delta_provider.delta.log.segment import complete_checkpoints
from airflow_delta_provider.delta.log.store import SIDECAR_DIR, LogFile, LogStore, TableLog
from airflow_delta_provider.delta.table_features.checkpoint_protection import protected_before
from airflow_delta_provider.delta.table_features.v2_checkpoint import uses_v2_checkpoints

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

log = logging.getLogger(__name__)

_EXPIRING_KINDS = ("commit", "checkpoint", "v2checkpoint", "crc", "compaction")


_DAY_MS = 86_400_000


def expiry_cutoff(now_ms: int, retention_ms: int, granularity_ms: int = _DAY_MS) -> int:
    """The newest modification time of an expired log file: midnight UTC of the day ``retention_ms``
    before ``now_ms`` (PROTOCOL.md's ``cutOffTimestamp``, delta-spark's ``truncateDay``), so one
    cleanup a day finds the same files expired whatever the hour. A DROP FEATURE that truncates
    the history cuts to the minute instead (``granularity_ms``)."""
    return (now_ms - retention_ms) // granularity_ms * granularity_ms


def cleanup_expired_logs(
    table: TableLog,
    snapshot: Snapshot,
    now_ms: int | None = None,
    *,
    retention_ms: int | None = None,
    granularity_ms: int = _DAY_MS,
) -> int:
    """Delete expired log files below the newest safe checkpoint, then
    unreferenced expired sidecars; the count deleted. ``retention_ms``
    overrides ``delta.logRetentionDuration`` (DROP FEATURE's truncation)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if retention_ms is None:
        retention_ms = table_properties.log_retention_ms(snapshot.metadata)
    cutoff = expiry_cutoff(now_ms, retention_ms, granularity_ms)
    store = table.log_store
    listing = store.list_from(0)
    files = [f for f in listing if f.version <= snapshot.version]
    expired_commits = [f.version for f in files if f.kind == "commit" and f.mtime_ms <= cutoff]
    if not expired_commits:
        return 0
    last_expired = max(expired_commits)
    safe = [v for v in complete_checkpoints(files) if v <= last_expired]
    if not safe:
        return 0
    keep_from = max(safe)
    protected = protected_before(snapshot.protocol, snapshot.metadata)
    if keep_from < protected:
        log.info(
            "log cleanup of %s skipped: it would stop at version %d, short of the protected history before %d",
            table.uri,
            keep_from,
            protected,
        )
        return 0
    expired = {f.name for f in files if f.version < keep_from and f.mtime_ms <= cutoff and f.kind in _EXPIRING_KINDS}
    # Oldest first in batches: an interrupted cleanup leaves a prefix deleted, as the protocol requires.
    deleted = store.delete_many(sorted(expired))
    checkpoint_went = any(f.is_checkpoint and f.name in expired for f in files)
    if checkpoint_went and uses_v2_checkpoints(snapshot.protocol):
        remaining = [f for f in listing if f.is_checkpoint and f.name not in expired]
        deleted += _cleanup_sidecars(store, remaining, cutoff)
    return deleted


def _cleanup_sidecars(store: LogStore, checkpoints: list[LogFile], cutoff: int) -> int:
    """Delete the sidecars older than ``cutoff`` that none of ``checkpoints`` refers to."""
    old = [m.name for m in store.list_sidecars() if m.mtime_ms <= cutoff and _is_sidecar_name(m.name)]
    if not old:
        return 0
    referenced: set[str] = set()
    for f in checkpoints:
        if f.num_parts is not None:
            continue  # multi-part checkpoints are V1 spec: no sidecars
        try:
            referenced.update(s.name for s in sidecar_references(store, f))
        except CorruptCheckpointError as exc:
            log.warning("keeping every sidecar: %s", exc)
            return 0
    return store.delete_many([f"{SIDECAR_DIR}/{name}" for name in old if name not in referenced])


def _is_sidecar_name(name: str) -> bool:
    """A sidecar, not a writer's hidden temporary or checksum file."""
    return name.endswith(".parquet") and not name.startswith(".")
