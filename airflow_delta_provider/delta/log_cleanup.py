"""Expired-log cleanup (PROTOCOL.md "Metadata Cleanup").

Commits and checkpoints older than ``delta.logRetentionDuration`` may go, but
only below a checkpoint: the newest complete checkpoint at or below the last
expired commit is kept, with everything after it, so every version from that
checkpoint on can still be reconstructed (delta-rs
``cleanup_expired_logs_for``, delta-spark ``MetadataCleanup``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from airflow_delta_provider.delta import config
from airflow_delta_provider.delta.log_segment import complete_checkpoints

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable


def cleanup_expired_logs(table: DeltaTable, snapshot: Snapshot, now_ms: int | None = None) -> int:
    """Delete expired log files below the newest safe checkpoint; the count deleted."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - config.log_retention_ms(snapshot.metadata)
    store = table.log_store
    files = [f for f in store.list_from(0) if f.version <= snapshot.version]
    expired_commits = [f.version for f in files if f.kind == "commit" and f.mtime_ms <= cutoff]
    if not expired_commits:
        return 0
    last_expired = max(expired_commits)
    safe = [v for v in complete_checkpoints(files) if v <= last_expired]
    if not safe:
        return 0
    keep_from = max(safe)
    expired = [
        f.name
        for f in files
        if f.version < keep_from and f.mtime_ms <= cutoff and f.kind in ("commit", "checkpoint", "crc", "compaction")
    ]
    # Oldest first in batches: an interrupted cleanup leaves a prefix deleted, as the protocol requires.
    expired.sort()
    return store.delete_many(expired)
