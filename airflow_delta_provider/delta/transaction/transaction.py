"""Optimistic transactions: stage actions, then commit them as one version.

A :class:`Transaction` remembers what it read (predicates, files, ``txn``
application ids) and what it writes. ``commit()`` claims ``readVersion + 1``
with an atomic put-if-absent; when another writer got there first it checks
every winning commit in order (:mod:`.conflicts`) and, if none conflicts,
tries again at the next free version. It never checkpoints: its
:class:`CommitResult` says what is due after the commit (a checkpoint every
``delta.checkpointInterval`` versions, then a log cleanup), and
:mod:`.post_commit` does that work once the commit stands, as delta-kernel-rs
returns post-commit stats for its caller to act on.

With ``delta.enableInCommitTimestamps`` (the ``inCommitTimestamp`` feature),
``commitInfo`` is the commit's first action and carries ``inCommitTimestamp``:
the writer's clock, but always after the previous commit's (PROTOCOL.md
"In-Commit Timestamps"), so the timestamps grow strictly with the versions
whatever the clocks of concurrent writers say. The commit that turns them on
records its version and timestamp in the table properties.

With the ``rowTracking`` feature each attempt gives the new ``add`` actions
fresh row ids above the high-water mark (the read snapshot's, or the last
winner's after a conflict) and the attempted version as their default row
commit version, and carries the new mark (:mod:`.row_tracking`). The commit
that turns ``delta.enableRowTracking`` on for an existing table re-adds the
files without row ids first (``dataChange=false``), as delta-spark's backfill
does, and names the materialized columns.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider import __version__
from airflow_delta_provider.delta import symlink_manifest, table_properties
from airflow_delta_provider.delta.actions.model import (
    TOKEN_TAG,
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_commit,
    serialize_commit,
)
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    CommitFailedError,
    CorruptLogError,
    InvalidInputError,
)
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.log.store import TableLog
from airflow_delta_provider.delta.table_features import (
    change_data_feed,
    clustering,
    column_mapping,
    generated_columns,
    in_commit_timestamps,
    row_tracking,
    type_widening,
)
from airflow_delta_provider.delta.table_features import check_constraints as constraints
from airflow_delta_provider.delta.table_features import gate as features
from airflow_delta_provider.delta.transaction.conflicts import ReadSet, WinningCommit, check_conflicts

if TYPE_CHECKING:
    from airflow_delta_provider.delta.scan.skipping import Predicate
    from airflow_delta_provider.delta.snapshot import Snapshot


ENGINE_INFO = f"airflow-delta-provider/{__version__}"
DEFAULT_PROTOCOL = Protocol(min_reader_version=1, min_writer_version=2)
MAX_COMMIT_ATTEMPTS = 1000


@dataclass(frozen=True)
class PostCommitDue:
    """What is due once a commit stands; the transaction does none of it
    (:mod:`.post_commit` does, for a table's transactions).

    ``checkpoint``: the version is a multiple of ``delta.checkpointInterval``.
    ``log_cleanup``: the table cleans up expired log files after that
    checkpoint (``delta.enableExpiredLogCleanup``)."""

    checkpoint: bool = False
    log_cleanup: bool = False


@dataclass(frozen=True)
class CommitResult:
    """The version a transaction committed, the commitInfo it wrote, and
    what is due after it."""

    version: int
    commit_info: dict[str, Any]
    attempts: int = 1
    post_commit: PostCommitDue = PostCommitDue()
    #: The committed actions that change the table's state, for the version
    #: checksum (a row tracking backfill's re-adds of live files left out);
    #: None when this transaction did not write them itself.
    state_actions: tuple[Action, ...] | None = None


class Transaction:
    """One atomic change to a table. Build it with :meth:`DeltaTable.transaction`."""

    def __init__(
        self,
        table: TableLog,
        operation: str,
        parameters: dict[str, Any],
        snapshot: Snapshot | None,
        *,
        isolation_level: str = table_properties.SERIALIZABLE,
    ) -> None:
        if isolation_level not in table_properties.TRANSACTION_ISOLATION_LEVELS:
            raise InvalidInputError(f"unknown isolation level {isolation_level!r}")
        self.table = table
        self.operation = operation
        self.parameters = dict(parameters)
        self.read_snapshot = snapshot
        self.isolation_level = isolation_level
        self.txn_id = str(uuid.uuid4())
        if snapshot is not None:
            features.check_writable(snapshot.protocol, snapshot.metadata)
        self._actions: list[AddFile | RemoveFile | AddCDCFile] = []
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._txns: dict[str, Txn] = {}
        self._domains: dict[str, DomainMetadata] = {}
        self._read_predicates: list[Predicate] = []
        self._read_paths: set[str] = set()
        self._read_whole_table = False
        self._read_app_ids: set[str] = set()
        self._tags: dict[str, str] = {}
        self._canonical = PathCanonicalizer(table.root)
        # The row id high-water mark to assign above, and the protocol a winner left in force.
        supported = snapshot is not None and row_tracking.is_supported(snapshot.protocol)
        self._row_id_mark = row_tracking.high_water_mark(snapshot.domain_metadata) if snapshot and supported else -1
        self._winner_protocol: Protocol | None = None
        #: The metadata a winner left in force (a change the conflict checks let
        #: through, or any change before an empty commit such as VACUUM END).
        self._winner_metadata: Metadata | None = None
        #: Whether every row this commit copies or updates keeps its stable row
        #: id (and every copied row its commit version): the commitInfo tag
        #: ``delta.rowTracking.preserved`` on a table with row tracking enabled.
        #: A writer that copies rows without the materialized columns sets it False.
        self.row_tracking_preserved = True

    # --- what the transaction read -----------------------------------------

    @property
    def read_version(self) -> int | None:
        return self.read_snapshot.version if self.read_snapshot is not None else None

    def read_predicate(self, predicate: Predicate | None) -> None:
        """Record a read of the rows matching ``predicate`` (None: the whole table)."""
        if predicate is None:
            self._read_whole_table = True
        else:
            self._read_predicates.append(predicate)

    def read_whole_table(self) -> None:
        self._read_whole_table = True

    def read_files(self, files: Iterable[AddFile]) -> None:
        """Record that these files were read, so their concurrent removal conflicts."""
        self._read_paths.update(self._canonical(f.path) for f in files)

    # --- what it writes ------------------------------------------------------

    def add(self, action: AddFile | RemoveFile | AddCDCFile) -> None:
        if not isinstance(action, (AddFile, RemoveFile, AddCDCFile)):
            raise InvalidInputError(f"only add, remove and cdc actions can be staged, not {type(action).__name__}")
        self._actions.append(action)

    def add_all(self, actions: Iterable[AddFile | RemoveFile | AddCDCFile]) -> None:
        for a in actions:
            self.add(a)

    def update_metadata(self, metadata: Metadata) -> None:
        self._metadata = metadata

    def tag(self, key: str, value: str) -> None:
        """Put ``key: value`` in the commit's ``commitInfo.tags`` (delta-spark's
        ``delta.identity.schemaUpdate`` marks a high-water-mark-only metadata change)."""
        self._tags[key] = value

    def set_domain(self, domain: DomainMetadata) -> None:
        """Stage a ``domainMetadata`` action (a user-controlled domain such as
        ``delta.clustering``); a concurrent change of the same domain conflicts.
        Setting ``delta.clustering`` lists the ``clustering`` and ``domainMetadata``
        writer features."""
        self._domains[domain.domain] = domain

    def update_protocol(self, protocol: Protocol) -> None:
        features.check_writable(protocol, self._metadata)
        self._protocol = protocol

    def set_txn(self, app_id: str, version: int) -> None:
        """Record ``txn`` (appId, version) for idempotent writes.

        As in delta-spark, the writer decides: it reads
        :meth:`Snapshot.txn_version` first and skips work already done. A
        concurrent commit of the same appId makes this commit fail with
        :class:`ConcurrentTransactionError`, so that check cannot be raced.
        """
        if not app_id:
            raise InvalidInputError("txn app id must not be empty")
        self._read_app_ids.add(app_id)
        self._txns[app_id] = Txn(app_id, int(version), int(time.time() * 1000))

    def remove_domain(self, domain: DomainMetadata) -> None:
        """Stage the removal of ``domain`` (its tombstone: the same domain,
        ``removed=true``), as DROP FEATURE removes a feature's domain."""
        self._domains[domain.domain] = replace(domain, removed=True)

    @property
    def metadata(self) -> Metadata | None:
        """The metadata the commit will leave in force: the staged one, else
        the one a winning commit left, else the read snapshot's."""
        if self._metadata is not None:
            return self._metadata
        if self._winner_metadata is not None:
            return self._winner_metadata
        return self.read_snapshot.metadata if self.read_snapshot is not None else None

    @property
    def _is_empty(self) -> bool:
        """Nothing read and nothing written: a marker commit such as VACUUM END."""
        return (
            self.read_snapshot is not None
            and not self._actions
            and self._metadata is None
            and self._protocol is None
            and not self._txns
            and not self._domains
            and not self._read_whole_table
            and not self._read_predicates
            and not self._read_paths
        )

    @property
    def is_blind_append(self) -> bool:
        return (
            not self._read_whole_table
            and not self._read_predicates
            and not self._read_paths
            and (self._metadata is None or self.read_snapshot is None)
            and all(isinstance(a, AddFile) for a in self._actions)
        )

    # --- commit --------------------------------------------------------------

    def commit(
        self,
        metrics: dict[str, Any] | None = None,
        token: str | None = None,
        *,
        user_metadata: str | None = None,
        max_attempts: int = MAX_COMMIT_ATTEMPTS,
    ) -> CommitResult:
        """Write the staged actions as the next version of the table. The
        result says what is due after it (a checkpoint, a log cleanup); this
        transaction does none of it (see :meth:`_committed`)."""
        result = self._write(metrics, token, user_metadata, max_attempts)
        self._committed(result)
        return result

    def _committed(self, result: CommitResult) -> None:
        """What runs once the commit stands: nothing here. A table's
        transaction (:mod:`.post_commit`) runs the post-commit work due."""

    def _write(
        self, metrics: dict[str, Any] | None, token: str | None, user_metadata: str | None, max_attempts: int
    ) -> CommitResult:
        self._validate()
        creating = self.read_snapshot is None
        backfill = self._row_tracking_backfill()
        protocol = self._protocol or (DEFAULT_PROTOCOL if creating else None)
        if self._metadata is not None:  # new table properties may need table features
            current = self._protocol_in_force(protocol, winner=False)
            upgraded = features.protocol_for(current, self._metadata)
            if upgraded != current or protocol is not None:
                protocol = upgraded
                if not creating:
                    self._protocol = protocol  # a protocol change for the conflict checks too
        staged = self._domains.get(clustering.DOMAIN)
        if staged is not None and not staged.removed:
            current = self._protocol_in_force(protocol, winner=False)
            if clustering.with_features(current) != current:
                protocol = clustering.with_features(current)
                if not creating:
                    self._protocol = protocol
        if protocol is not None:
            features.check_writable(protocol, self.metadata)
        version = 0 if self.read_snapshot is None else self.read_snapshot.version + 1
        store = self.table.log_store
        for attempt in range(1, max_attempts + 1):
            info = self._commit_info(metrics, token, user_metadata)
            in_force = self._protocol_in_force(protocol)
            if self.metadata is not None and row_tracking.enabled(in_force, self.metadata):
                flag = "true" if self.row_tracking_preserved else "false"
                info["tags"] = {**info.get("tags", {}), row_tracking.PRESERVED_TAG: flag}
            ict = self._in_commit_timestamp(version, info["timestamp"], in_force)
            if ict is not None:
                info = {"timestamp": info["timestamp"], "inCommitTimestamp": ict, **info}
            actions: list[Action] = [CommitInfo(info)]
            if protocol is not None:
                actions.append(protocol)
            if self._metadata is not None:
                actions.append(self._metadata_at(version, protocol, ict))
            actions.extend(self._txns.values())
            actions.extend(self._domains.values())
            actions.extend(self._file_actions(version, protocol, backfill))
            if store.put_if_absent(version, serialize_commit(actions)):
                changes = tuple(actions[: len(actions) - len(backfill)])  # the backfill re-adds come last
                return CommitResult(version, info, attempt, self._due_after(version), changes)
            resolved = self._resolve_conflicts(version)
            if isinstance(resolved, CommitResult):
                return resolved
            version = resolved
        raise CommitFailedError(f"gave up after {max_attempts} commit attempts on {self.table.uri}")

    def _row_tracking_backfill(self) -> list[AddFile]:
        """Name the materialized columns of staged metadata that turns row
        tracking on (or keep the names the table gave them), and, when it
        turns it on for an existing table, the re-adds that give its files
        without row ids theirs (PROTOCOL.md: every live file has them in the
        version that enables it). Those files count as read: a concurrent
        change to them conflicts."""
        if self._metadata is None:
            return []
        snap = self.read_snapshot
        previous = snap.metadata if snap is not None else None
        if self._protocol is not None and not row_tracking.is_supported(self._protocol):
            return []  # a protocol without row tracking (DROP FEATURE): no names to keep
        self._metadata = row_tracking.with_materialized_names(self._metadata, previous)
        if snap is None or not table_properties.row_tracking_enabled(self._metadata):
            return []
        if table_properties.row_tracking_enabled(snap.metadata) and row_tracking.is_supported(snap.protocol):
            return []
        touched = {(self._canonical(a.path), getattr(a, "dv_id", None)) for a in self._actions}
        files = [f for f in snap.files if (self._canonical(f.path), f.dv_id) not in touched]
        readds = row_tracking.backfill(files)
        if readds:
            self.read_whole_table()
            self.read_files(readds)
        return [replace(f, stats=f.stats_json(), stats_parsed=None) for f in readds]

    def _protocol_in_force(self, staged: Protocol | None, *, winner: bool = True) -> Protocol:
        """The protocol a commit writes under: the staged one, else (with
        ``winner``) the one a winning commit left, else the read snapshot's.
        A new table always stages one."""
        if staged is not None:
            return staged
        if winner and self._winner_protocol is not None:
            return self._winner_protocol
        assert self.read_snapshot is not None, "a transaction creating a table stages its protocol"
        return self.read_snapshot.protocol

    def _file_actions(self, version: int, protocol: Protocol | None, backfill: list[AddFile]) -> list[Action]:
        """The staged adds and removes (and backfill re-adds) as committed at
        ``version``: with row ids and commit versions when the protocol in
        force has row tracking, the new high-water mark first."""
        files: list[AddFile | RemoveFile | AddCDCFile] = [*self._actions, *backfill]
        in_force = self._protocol_in_force(protocol)
        if not row_tracking.assigns_row_ids(in_force, self.metadata):
            return list(files)
        assigned, mark = row_tracking.assign(files, self._row_id_mark, version)
        head: list[Action] = [row_tracking.domain_action(mark)] if mark != self._row_id_mark else []
        return [*head, *assigned]

    def _metadata_at(self, version: int, protocol: Protocol | None, ict: int | None = None) -> Metadata:
        """The staged metadata as committed at ``version`` (a preview type
        widening table dates its new type changes with it; a commit that
        turns in-commit timestamps on records its version and timestamp, and
        one that turns them off drops those)."""
        assert self._metadata is not None
        snap = self.read_snapshot
        in_force = self._protocol_in_force(protocol, winner=False)
        previous = snap.metadata if snap is not None else None
        md = type_widening.stamp_preview_version(self._metadata, previous, in_force, version)
        return in_commit_timestamps.record_enablement(md, previous, version, ict)

    def _in_commit_timestamp(self, version: int, now_ms: int, protocol: Protocol) -> int | None:
        """The ``inCommitTimestamp`` of the commit at ``version``, or None when
        the table (as this commit leaves it) does not use them: ``now_ms``,
        or 1 ms after the previous commit's time if that is later (its
        in-commit timestamp, or the file's time for a commit made before they
        were on). They are on when the table property says so and the
        protocol lists the feature (PROTOCOL.md)."""
        md = self.metadata
        if md is None or in_commit_timestamps.enabled_since(protocol, md) is None:
            return None
        return in_commit_timestamps.next_timestamp(self.table.log_store, version, now_ms)

    def _validate(self) -> None:
        md = self.metadata
        if md is None:
            raise InvalidInputError("creating a table needs its metadata (schema and partition columns)")
        if self._metadata is not None:
            previous = self.read_snapshot.metadata if self.read_snapshot is not None else None
            symlink_manifest.check_properties(self._metadata, previous, self.read_snapshot)
            column_mapping.check_transition(previous, self._metadata)
            column_mapping.check_mapping(self._metadata.schema_json, self._metadata.configuration)
            change_data_feed.check_column_names(self._metadata)
            constraints.check_resolvable(self._metadata)
            generated_columns.check_resolvable(self._metadata.schema_json)
        symlink_manifest.check_files(
            md, (a for a in self._actions if isinstance(a, AddFile)), f"{self.operation} cannot add files"
        )
        # The table as it is decides (delta-spark's assertRemovable on the read
        # snapshot): staged metadata cannot switch the protection off, or on, for its own commit.
        current = self.read_snapshot.metadata if self.read_snapshot is not None else md
        if table_properties.append_only(current) and any(
            isinstance(a, RemoveFile) and a.data_change for a in self._actions
        ):
            raise AppendOnlyViolationError(
                f"table {self.table.uri} is append-only (delta.appendOnly=true): {self.operation} would remove data"
            )
        if any(isinstance(a, AddCDCFile) for a in self._actions) and not table_properties.change_data_feed_enabled(md):
            raise InvalidInputError(
                f"{self.operation} stages change data files but {table_properties.ENABLE_CHANGE_DATA_FEED} is not true"
            )
        seen: set[tuple[str, str, str | None]] = set()
        for a in self._actions:
            key = (a.KEY, self._canonical(a.path), getattr(a, "dv_id", None))
            if key in seen:
                raise InvalidInputError(f"{a.KEY} of {a.path} appears twice in one commit")
            seen.add(key)
        keys = column_mapping.ColumnMapping.of(md.schema_json, md.configuration).partition_keys(md.partition_columns)
        partition_columns = set(keys.values())
        for a in self._actions:
            if isinstance(a, (AddFile, AddCDCFile)) and set(a.partition_values) != partition_columns:
                raise InvalidInputError(
                    f"add {a.path} has partition values for {sorted(a.partition_values)}, "
                    f"the table is partitioned by {sorted(partition_columns)}"
                )

    def _commit_info(
        self, metrics: dict[str, Any] | None, token: str | None, user_metadata: str | None
    ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "timestamp": int(time.time() * 1000),
            "operation": self.operation,
            "operationParameters": {k: _param(v) for k, v in self.parameters.items()},
        }
        if self.read_version is not None:
            info["readVersion"] = self.read_version
        info["isolationLevel"] = self.isolation_level
        info["isBlindAppend"] = self.is_blind_append
        if metrics is not None:
            info["operationMetrics"] = {k: str(v) for k, v in metrics.items()}
        if user_metadata is not None:
            info["userMetadata"] = user_metadata
        tags = dict(self._tags)
        if token is not None:
            tags[TOKEN_TAG] = token
        if tags:
            info["tags"] = tags
        info["engineInfo"] = ENGINE_INFO
        info["txnId"] = self.txn_id
        return info

    def _read_set(self) -> ReadSet:
        snap = self.read_snapshot
        md = self.metadata
        return ReadSet(
            read_version=self.read_version,
            isolation_level=self.isolation_level,
            is_blind_append=self.is_blind_append,
            read_whole_table=self._read_whole_table or snap is None,
            read_predicates=list(self._read_predicates),
            read_paths=set(self._read_paths),
            removed_paths={self._canonical(a.path) for a in self._actions if isinstance(a, RemoveFile)},
            read_app_ids=set(self._read_app_ids),
            changes_metadata=self._metadata is not None,
            changes_protocol=self._protocol is not None,
            is_empty=self._is_empty,
            domains=set(self._domains),
            schema=json.loads(md.schema_string) if md else {"type": "struct", "fields": []},
            partition_columns=list(md.partition_columns) if md else [],
            canonical=self._canonical,
            mapping_mode=column_mapping.mode_of(md.configuration) if md else column_mapping.NONE,
            metadata=snap.metadata if snap is not None else None,
            protocol=snap.protocol if snap is not None else None,
        )

    def _resolve_conflicts(self, attempted: int) -> int | CommitResult:
        """Check every commit from ``attempted`` on; the next version to try."""
        store = self.table.log_store
        current = self._read_set()
        winners = [f for f in store.list_from(attempted) if f.kind == "commit"]
        expected = attempted
        for f in winners:
            if f.version != expected:
                raise CorruptLogError(f"versions are not contiguous after {expected - 1} in {self.table.uri}")
            won = list(parse_commit(store.read(f.name)))
            winner = WinningCommit.from_actions(f.version, won)
            if winner.commit_info is not None and winner.commit_info.txn_id == self.txn_id:
                return CommitResult(f.version, winner.commit_info.raw)
            check_conflicts(current, winner)
            # delta-spark's reassignRowIdsAndCommitVersions: the next attempt
            # assigns above the winner's high-water mark, under its protocol.
            mark = row_tracking.high_water_mark([a for a in won if isinstance(a, DomainMetadata)])
            self._row_id_mark = max(self._row_id_mark, mark)
            if winner.protocol is not None:
                self._winner_protocol = winner.protocol
            if winner.metadata is not None:
                self._winner_metadata = winner.metadata
            expected += 1
        if expected == attempted:
            raise CommitFailedError(f"version {attempted} of {self.table.uri} is taken but cannot be listed")
        return expected

    def _due_after(self, version: int) -> PostCommitDue:
        """What is due after committing ``version``: a checkpoint every
        ``delta.checkpointInterval`` versions, and after it a log cleanup
        when the table enables it."""
        md = self.metadata
        assert md is not None
        if version == 0 or version % table_properties.checkpoint_interval(md) != 0:
            return PostCommitDue()
        return PostCommitDue(checkpoint=True, log_cleanup=table_properties.expired_log_cleanup_enabled(md))


def _param(value: Any) -> Any:
    """operationParameters in delta-spark's style: lists and dicts JSON-encoded."""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, separators=(",", ":"))
    return value
