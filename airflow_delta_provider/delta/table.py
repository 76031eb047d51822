"""``DeltaTable``: the entry point to one table's log.

Like delta-rs's ``DeltaTable`` and Delta Kernel's ``Table``, it is a thin
façade: it opens snapshots (latest, by version, by timestamp), reads history,
finds a caller's commit by its operation token, and starts transactions.
A transaction it starts runs the post-commit work (checkpoint, log cleanup)
after its commit, as ``post_commit_hooks`` allow
(:mod:`airflow_delta_provider.delta.transaction.post_commit`).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import CommitInfo, Txn, parse_commit
from airflow_delta_provider.delta.errors import (
    CorruptCheckpointError,
    CorruptLogError,
    InvalidInputError,
    TableNotFoundError,
    VersionNotFoundError,
)
from airflow_delta_provider.delta.log.segment import build_segment, list_for_version
from airflow_delta_provider.delta.log.store import LogFile, LogStore
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.storage import TableStorage, open_storage
from airflow_delta_provider.delta.table_features import in_commit_timestamps
from airflow_delta_provider.delta.transaction.post_commit import PostCommitHookProperties, TableTransaction

log = logging.getLogger(__name__)

#: How far a commit file's time may precede its ``txn``'s ``lastUpdated`` (two clocks).
TXN_CLOCK_SKEW_MS = 3_600_000


class DeltaTable:
    """A Delta table at ``uri``: a local path, or a ``file://``, ``s3://``
    (``s3a://``), ``az://`` (``abfss://``) or ``gs://`` URI.

    ``storage_options`` configure the store over its environment chain
    (:mod:`airflow_delta_provider.delta.storage.options`).
    """

    def __init__(self, uri: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> None:
        self.uri = os.fspath(uri)
        self.storage: TableStorage = open_storage(self.uri, storage_options)
        self.log_store = LogStore(self.storage)

    @property
    def root(self) -> str:
        """The canonical table root: an absolute path, or ``scheme://bucket/prefix``."""
        return self.storage.root

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r})"

    # --- versions ------------------------------------------------------------

    def exists(self) -> bool:
        return any(f.kind == "commit" or f.is_checkpoint for f in self.log_store.list_from(0))

    def latest_version(self) -> int:
        """The newest version, from one listing that starts at the checkpoint hint."""
        files = list_for_version(self.log_store, None)
        versions = [f.version for f in files if f.kind == "commit" or f.is_checkpoint]
        if not versions:
            raise TableNotFoundError(f"{self.uri} is not a Delta table: no commits in _delta_log")
        return max(versions)

    def snapshot(self, version: int | None = None, timestamp: dt.datetime | str | int | None = None) -> Snapshot:
        """The table at ``version``, at ``timestamp``, or latest when both are None.

        A timestamp selects the newest commit made at or before it, commit
        times being file modification times made strictly increasing
        (delta-spark ``DeltaHistoryManager``). A timestamp after the latest
        commit selects the latest version, as in delta-rs: a DAG asking for
        "the table as of the end of this interval" must not fail because
        nothing was committed since.
        """
        if version is not None and timestamp is not None:
            raise InvalidInputError("give a version or a timestamp, not both")
        if timestamp is not None:
            version, ts = self.version_at(timestamp)
            return self._load(version, ts)
        return self._load(version, None)

    def _load(self, version: int | None, timestamp: int | None) -> Snapshot:
        store = self.log_store
        segment = build_segment(list_for_version(store, version), version, table_root=self.uri)
        torn: set[str] = set()
        while True:
            try:
                return Snapshot.load(store, segment, timestamp)
            except CorruptCheckpointError as exc:
                # A torn checkpoint (or a lost sidecar): fall back to another one
                # at that version, an older one, or the commits. When the log no
                # longer holds what that needs, this error is the one to report.
                assert segment.checkpoint_files
                log.warning("%s; reading %s without it", exc, self.uri)
                torn.add(segment.checkpoint_files[0].name)
                try:
                    segment = build_segment(
                        store.list_from(0), version, skip_files=frozenset(torn), table_root=self.uri
                    )
                except (VersionNotFoundError, CorruptLogError, TableNotFoundError) as fallback:
                    raise exc from fallback

    def commit_timestamps(
        self, files: list[LogFile] | None = None, snapshot: Snapshot | None = None
    ) -> list[tuple[int, int]]:
        """(version, timestamp ms) of every commit file, timestamps made monotonic.

        With in-commit timestamps (``delta.enableInCommitTimestamps``), a
        commit from their enablement version on is dated by the
        ``inCommitTimestamp`` in its ``commitInfo``, not by its file's time,
        which a copy or a store may change (PROTOCOL.md "In-Commit Timestamps").
        A caller that already holds the log's listing (``files``) or the latest
        snapshot saves listing or loading them again."""
        commits = [f for f in (self.log_store.list_from(0) if files is None else files) if f.kind == "commit"]
        if not commits:
            since = None
        elif snapshot is not None:
            since = in_commit_timestamps.enabled_since(snapshot.protocol, snapshot.metadata)
        else:
            since = self._in_commit_timestamps_since()
        out: list[tuple[int, int]] = []
        prev = None
        for f in commits:
            ts = f.mtime_ms
            if since is not None and f.version >= since:
                ts = self.in_commit_timestamp(f) or ts
            if prev is not None and ts <= prev:  # file times are coarse; the switch to ICT may not be later
                ts = prev + 1
            out.append((f.version, ts))
            prev = ts
        return out

    def _in_commit_timestamps_since(self) -> int | None:
        """The first version dated by in-commit timestamps, per the latest protocol and metadata; None when off."""
        try:
            snapshot = self.snapshot()
        except (VersionNotFoundError, CorruptLogError):
            return None
        return in_commit_timestamps.enabled_since(snapshot.protocol, snapshot.metadata)

    def in_commit_timestamp(self, commit: LogFile) -> int | None:
        """The ``inCommitTimestamp`` of ``commit``, or None when it has none.
        Only its first line is parsed: a commit that has one puts
        ``commitInfo`` first (PROTOCOL.md)."""
        return in_commit_timestamps.read(self.log_store, commit)

    def version_at(self, timestamp: dt.datetime | str | int) -> tuple[int, int]:
        """(version, its commit timestamp) of the newest commit at or before ``timestamp``."""
        ts = _to_millis(timestamp)
        commits = self.commit_timestamps()
        if not commits:
            raise TableNotFoundError(f"{self.uri} is not a Delta table: no commits in _delta_log")
        best = newest_commit_at_or_before(commits, ts)
        if best is None:
            first = _iso(commits[0][1])
            raise VersionNotFoundError(
                f"timestamp {_iso(ts)} is before the earliest available version {commits[0][0]} ({first})"
            )
        return best

    # --- history ---------------------------------------------------------------

    def _commits(
        self, since_version: int = 0, not_before_ms: int | None = None, until_version: int | None = None
    ) -> Iterator[tuple[LogFile, list[Any]]]:
        """(commit file, its actions), newest first; commits older than
        ``not_before_ms`` (by file time) or after ``until_version`` are skipped
        without being read."""
        commits = [f for f in self.log_store.list_from(since_version) if f.kind == "commit"]
        if not commits and since_version == 0:
            raise TableNotFoundError(f"{self.uri} is not a Delta table: no commits in _delta_log")
        for f in reversed(commits):
            if not_before_ms is not None and f.mtime_ms < not_before_ms:
                continue
            if until_version is not None and f.version > until_version:
                continue
            try:
                data = self.log_store.read(f.name)
            except FileNotFoundError:
                continue
            yield f, list(parse_commit(data))

    def _commit_infos(
        self, since_version: int = 0, not_before_ms: int | None = None, until_version: int | None = None
    ) -> Iterator[tuple[LogFile, CommitInfo | None]]:
        """(commit file, its commitInfo), newest first, as :meth:`_commits`."""
        for f, actions in self._commits(since_version, not_before_ms, until_version):
            yield f, next((a for a in actions if isinstance(a, CommitInfo)), None)

    def history(
        self, limit: int | None = None, *, start_version: int | None = None, end_version: int | None = None
    ) -> list[dict[str, Any]]:
        """commitInfo of the newest ``limit`` commits from ``start_version`` to
        ``end_version`` (both included; the whole log when None), newest first,
        each with its ``version``."""
        for name, value in (("limit", limit), ("start_version", start_version), ("end_version", end_version)):
            if value is not None and value < (1 if name == "limit" else 0):
                raise InvalidInputError(f"{name} must be >= {1 if name == 'limit' else 0}, got {value}")
        if start_version is not None and end_version is not None and start_version > end_version:
            raise InvalidInputError(f"start_version {start_version} is after end_version {end_version}")
        if start_version and not self.exists():
            raise TableNotFoundError(f"{self.uri} is not a Delta table: no commits in _delta_log")
        out: list[dict[str, Any]] = []
        for f, info in self._commit_infos(start_version or 0, until_version=end_version):
            if limit is not None and len(out) >= limit:
                break
            entry = {"version": f.version}
            entry.update(info.raw if info else {"timestamp": f.mtime_ms})
            if isinstance(entry.get("inCommitTimestamp"), int):  # delta-spark's history shows it as the time
                entry["timestamp"] = entry["inCommitTimestamp"]
            out.append(entry)
        return out

    def find_commit(
        self, token: str, since_version: int = 0, *, not_before_ms: int | None = None
    ) -> tuple[int, CommitInfo] | None:
        """The newest commit whose commitInfo carries operation ``token``.

        Only commits from ``since_version`` on, and written at or after
        ``not_before_ms`` when given, are read: a caller that knows when its
        work began need not read the whole history.
        """
        for f, info in self._commit_infos(since_version, not_before_ms):
            if info is not None and info.token == token:
                return f.version, info
        return None

    def find_txn_commit(
        self, app_id: str, version: int, snapshot: Snapshot | None = None
    ) -> tuple[int, CommitInfo | None] | None:
        """The commit that recorded ``txn`` (``app_id``, ``version``), when the
        table has seen that version of the application; else None.

        A write whose ``txn`` the table has seen is skipped (delta-spark skips
        it silently); this names the version that earlier write made, so a
        rerun can report it. Only commits since the ``txn``'s ``lastUpdated``
        (less a clock allowance) are read. None also when the application has
        moved past ``version`` and the commit that recorded it is gone (log
        cleanup) or never existed (the write of ``version`` itself was skipped).
        """
        snapshot = snapshot if snapshot is not None else self.snapshot()
        recorded = snapshot.txn_version(app_id)
        if recorded is None or recorded < version:
            return None
        last = next((t for t in snapshot.txn_actions if t.app_id == app_id), None)
        not_before_ms = None
        if recorded == version and last is not None and last.last_updated is not None:
            not_before_ms = last.last_updated - TXN_CLOCK_SKEW_MS  # the commit's file was written after it
        for f, actions in self._commits(0, not_before_ms, until_version=snapshot.version):
            if any(isinstance(a, Txn) and a.app_id == app_id and a.version == version for a in actions):
                return f.version, next((a for a in actions if isinstance(a, CommitInfo)), None)
        return None

    # --- writing ---------------------------------------------------------------

    def transaction(
        self,
        operation: str,
        parameters: dict[str, Any] | None = None,
        snapshot: Snapshot | None = None,
        *,
        isolation_level: str = table_properties.SERIALIZABLE,
        post_commit_hooks: PostCommitHookProperties | None = None,
    ) -> TableTransaction:
        """Start a transaction reading ``snapshot`` (None creates the table).

        Its commit is followed by the work due after it: a checkpoint every
        ``delta.checkpointInterval`` versions, then a log cleanup when the
        table enables it. ``post_commit_hooks`` switches either off (or the
        cleanup on); a failure there never undoes the commit."""
        return TableTransaction(
            self,
            operation,
            parameters or {},
            snapshot,
            isolation_level=isolation_level,
            post_commit_hooks=post_commit_hooks,
        )


def newest_commit_at_or_before(commit_times: list[tuple[int, int]], timestamp_ms: int) -> tuple[int, int] | None:
    """(version, time) of the newest commit made at or before ``timestamp_ms``, from
    :meth:`DeltaTable.commit_timestamps`; None when every commit is later."""
    best = None
    for version, ts in commit_times:
        if ts > timestamp_ms:
            break
        best = (version, ts)
    return best


def _to_millis(value: dt.datetime | str | int) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(f"cannot parse timestamp {value!r}: expected ISO 8601") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return int(value.timestamp() * 1000)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
