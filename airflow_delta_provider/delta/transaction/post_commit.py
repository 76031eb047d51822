"""Post-commit work: what runs after a commit stands, outside the transaction.

A :class:`~.transaction.Transaction` never checkpoints. Its
:class:`~.transaction.CommitResult` says what is due after it
(:class:`~.transaction.PostCommitDue`: a checkpoint every
``delta.checkpointInterval`` versions, then a cleanup of expired log files),
as delta-kernel-rs returns post-commit stats for its caller to act on.
:func:`run_post_commit` does that work, behind
:class:`PostCommitHookProperties`, the named option delta-rs gives the same
choice.

First comes the version checksum (``NNN.crc``, :func:`write_version_checksum`),
as delta-spark's ``postCommit`` writes it before a checkpoint: derived from
the previous version's checksum (or the read snapshot's state, when it is
that version's and already loaded) plus the commit's actions. The state,
when at hand, also tells a re-add of a live file from a new file. When neither
is at hand no checksum is written: delta-spark too skips the file rather than
replay the whole table on every commit.

Then, on a table with ``delta.compatibility.symlinkFormatManifest.enabled``,
the symlink manifests of the partitions the commit touched
(:func:`update_symlink_manifests`, as delta-spark's ``GenerateSymlinkManifest``
hook); a failed update is repaired by the next commit's.

The commit is durable once its file exists: nothing here can undo it. A
failed checksum, checkpoint (or cleanup) is logged, and the commit's result stands.

:class:`TableTransaction` is the transaction
:meth:`DeltaTable.transaction <airflow_delta_provider.delta.table.DeltaTable.transaction>`
starts: the core's commit, then :func:`run_post_commit`. Whoever commits
through a table gets its checkpoints and log cleanup.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from airflow_delta_provider.delta import symlink_manifest, table_properties
from airflow_delta_provider.delta.actions.model import CommitInfo, Metadata, serialize_commit
from airflow_delta_provider.delta.checkpoint import log_cleanup, writer
from airflow_delta_provider.delta.checksum import derive
from airflow_delta_provider.delta.checksum.version_checksum import VersionChecksum, checksum_name, read_checksum
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.log.store import LogFile, TableLog, commit_name
from airflow_delta_provider.delta.transaction.transaction import CommitResult, Transaction

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PostCommitHookProperties:
    """Which post-commit work runs when it is due (delta-rs's
    ``PostCommitHookProperties``).

    ``create_checkpoint``: write the checkpoint a commit makes due.
    ``cleanup_expired_logs``: after that checkpoint, delete expired log
    files; None lets the table decide (``delta.enableExpiredLogCleanup``).
    """

    create_checkpoint: bool = True
    cleanup_expired_logs: bool | None = None


@dataclass(frozen=True)
class PostCommitOutcome:
    """What the post-commit work did: the version it checkpointed (None:
    none was due, or asked for, or it failed), the log files it deleted, and
    the error that stopped it."""

    checkpoint_version: int | None = None
    log_files_deleted: int = 0
    error: str | None = None


class SnapshotSource(TableLog, Protocol):
    """A table that opens its versions: what the post-commit work needs (a
    :class:`~airflow_delta_provider.delta.table.DeltaTable`)."""

    def snapshot(self, version: int | None = None) -> Snapshot: ...


def write_version_checksum(table: TableLog, result: CommitResult, read_snapshot: Snapshot | None) -> bool:
    """Write the checksum of the version ``result`` committed, when it can be
    derived cheaply; whether it was written. Never raises."""
    try:
        if result.state_actions is None:
            return False
        version = result.version
        live: set[str] | None = None
        canonical = PathCanonicalizer(table.root)
        if version == 0:
            previous: VersionChecksum | None = derive.empty()
            live = set()
        elif read_snapshot is not None and read_snapshot.version == version - 1 and read_snapshot.files_loaded:
            previous = read_snapshot.checksum()
            live = {canonical(p) for p in read_snapshot.file_paths()}
        else:
            previous = read_checksum(table.log_store, version - 1)
        if previous is None:
            return False
        operation = str(result.commit_info.get("operation"))
        checksum = derive.advance(
            previous, result.state_actions, operation=operation, live_paths=live, canonical=canonical
        )
        if checksum is None:
            return False
        checksum.txn_id = result.commit_info.get("txnId")
        return table.log_store.create_exclusive(checksum_name(version), checksum.to_bytes())
    except Exception as exc:  # the commit stands whatever happens to its checksum
        log.warning("version %d committed, but its checksum was not written: %r", result.version, exc)
        return False


def update_symlink_manifests(table: SnapshotSource, result: CommitResult, read_snapshot: Snapshot | None) -> bool:
    """Update the symlink manifests after ``result`` when the table asks for
    them (:func:`~airflow_delta_provider.delta.symlink_manifest.update_after_commit`);
    whether it failed. Never raises: the failure is logged, and the next
    commit regenerates every manifest."""
    try:
        actions = result.state_actions
        staged = [a for a in actions or () if isinstance(a, Metadata)]
        if staged:
            metadata = staged[-1]
        elif actions is not None and read_snapshot is not None:
            metadata = read_snapshot.metadata
        else:
            metadata = table.snapshot(result.version).metadata
        symlink_manifest.update_after_commit(
            table, result.version, actions, metadata, table.snapshot, read_snapshot=read_snapshot
        )
    except Exception as exc:  # the commit stands whatever happens to its manifests
        log.warning(
            "version %d committed, but its symlink manifests were not updated (the next commit regenerates them): %r",
            result.version,
            exc,
        )
        return True
    return False


def run_post_commit(
    table: SnapshotSource,
    result: CommitResult,
    properties: PostCommitHookProperties | None = None,
    read_snapshot: Snapshot | None = None,
) -> PostCommitOutcome:
    """Do the work due after ``result`` on ``table`` (``read_snapshot``: the
    version the transaction read); never raises, since the commit stands."""
    properties = properties or PostCommitHookProperties()
    write_version_checksum(table, result, read_snapshot)
    update_symlink_manifests(table, result, read_snapshot)
    due = result.post_commit
    if not (due.checkpoint and properties.create_checkpoint):
        return PostCommitOutcome()
    cleanup = due.log_cleanup if properties.cleanup_expired_logs is None else properties.cleanup_expired_logs
    try:
        snapshot = snapshot_of(table, result, read_snapshot)
        writer.write_checkpoint(table, snapshot, just_committed=True)
        deleted = log_cleanup.cleanup_expired_logs(table, snapshot) if cleanup else 0
    except Exception as exc:  # the commit stands whatever happens to its checkpoint
        log.warning("version %d committed, but its checkpoint failed: %r", result.version, exc)
        return PostCommitOutcome(error=repr(exc))
    return PostCommitOutcome(checkpoint_version=result.version, log_files_deleted=deleted)


def moved_on_by(read_snapshot: Snapshot | None, result: CommitResult) -> bool:
    """Whether ``result``'s version is ``read_snapshot``'s state unchanged:
    committed at the next version, with no action but ``commitInfo`` (a
    marker such as VACUUM START), on a snapshot whose files are loaded."""
    actions = result.state_actions
    return (
        read_snapshot is not None
        and read_snapshot.files_loaded
        and result.version == read_snapshot.version + 1
        and actions is not None
        and all(isinstance(a, CommitInfo) for a in actions)
    )


def snapshot_of(table: SnapshotSource, result: CommitResult, read_snapshot: Snapshot | None) -> Snapshot:
    """The snapshot of the version ``result`` committed: ``read_snapshot``
    moved on, reading nothing, when that commit changed no state
    (:func:`moved_on_by`); else loaded. The moved-on snapshot's time is the
    commit's own (its in-commit timestamp, else the writer's clock), not the
    store's modification time of the file."""
    if read_snapshot is None or not moved_on_by(read_snapshot, result):
        return table.snapshot(result.version)
    info = result.commit_info
    assert result.state_actions is not None
    size = len(serialize_commit(result.state_actions))
    when = int(info.get("inCommitTimestamp", info["timestamp"]))
    return read_snapshot.after_empty_commit(LogFile(commit_name(result.version), result.version, "commit", size, when))


class TableTransaction(Transaction):
    """A table's transaction: :meth:`commit` commits, then runs the post-commit
    work due (:func:`run_post_commit`) as ``post_commit_hooks`` allow."""

    def __init__(
        self,
        table: SnapshotSource,
        operation: str,
        parameters: dict[str, Any],
        snapshot: Snapshot | None,
        *,
        isolation_level: str = table_properties.SERIALIZABLE,
        post_commit_hooks: PostCommitHookProperties | None = None,
    ) -> None:
        super().__init__(table, operation, parameters, snapshot, isolation_level=isolation_level)
        self._source = table
        self.post_commit_hooks = post_commit_hooks or PostCommitHookProperties()
        #: What the post-commit work did, once :meth:`commit` returned.
        self.post_commit_outcome: PostCommitOutcome | None = None

    def _committed(self, result: CommitResult) -> None:
        """Once the commit stands, run the post-commit work due."""
        self.post_commit_outcome = run_post_commit(self._source, result, self.post_commit_hooks, self.read_snapshot)


__all__ = [
    "PostCommitHookProperties",
    "PostCommitOutcome",
    "SnapshotSource",
    "TableTransaction",
    "moved_on_by",
    "run_post_commit",
    "snapshot_of",
    "update_symlink_manifests",
    "write_version_checksum",
]
