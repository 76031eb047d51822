"""Post-commit work: what runs after a commit stands, outside the transaction.

A :class:`~.transaction.Transaction` never checkpoints. Its
:class:`~.transaction.CommitResult` says what is due after it
(:class:`~.transaction.PostCommitDue`: a checkpoint every
``delta.checkpointInterval`` versions, then a cleanup of expired log files),
as delta-kernel-rs returns post-commit stats for its caller to act on.
:func:`run_post_commit` does that work, behind
:class:`PostCommitHookProperties`, the named option delta-rs gives the same
choice.

The commit is durable once its file exists: nothing here can undo it. A
failed checkpoint (or cleanup) is logged, and the commit's result stands.

:class:`TableTransaction` is the transaction
:meth:`DeltaTable.transaction <airflow_delta_provider.delta.table.DeltaTable.transaction>`
starts: the core's commit, then :func:`run_post_commit`. Whoever commits
through a table gets its checkpoints and log cleanup.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from airflow_delta_provider.delta.checkpoint import log_cleanup, writer
from airflow_delta_provider.delta.log.store import TableLog
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


def run_post_commit(
    table: SnapshotSource, result: CommitResult, properties: PostCommitHookProperties | None = None
) -> PostCommitOutcome:
    """Do the work due after ``result`` on ``table``; never raises, since the commit stands."""
    properties = properties or PostCommitHookProperties()
    due = result.post_commit
    if not (due.checkpoint and properties.create_checkpoint):
        return PostCommitOutcome()
    cleanup = due.log_cleanup if properties.cleanup_expired_logs is None else properties.cleanup_expired_logs
    try:
        snapshot = table.snapshot(result.version)
        writer.write_checkpoint(table, snapshot)
        deleted = log_cleanup.cleanup_expired_logs(table, snapshot) if cleanup else 0
    except Exception as exc:  # the commit stands whatever happens to its checkpoint
        log.warning("version %d committed, but its checkpoint failed: %r", result.version, exc)
        return PostCommitOutcome(error=repr(exc))
    return PostCommitOutcome(checkpoint_version=result.version, log_files_deleted=deleted)


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
        isolation_level: str = "Serializable",
        post_commit_hooks: PostCommitHookProperties | None = None,
    ) -> None:
        super().__init__(table, operation, parameters, snapshot, isolation_level=isolation_level)
        self._source = table
        self.post_commit_hooks = post_commit_hooks or PostCommitHookProperties()
        #: What the post-commit work did, once :meth:`commit` returned.
        self.post_commit_outcome: PostCommitOutcome | None = None

    def _committed(self, result: CommitResult) -> None:
        """Once the commit stands, run the post-commit work due."""
        self.post_commit_outcome = run_post_commit(self._source, result, self.post_commit_hooks)


__all__ = [
    "PostCommitHookProperties",
    "PostCommitOutcome",
    "SnapshotSource",
    "TableTransaction",
    "run_post_commit",
]
