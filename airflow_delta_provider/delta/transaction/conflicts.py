"""Conflict detection between a transaction and a commit that beat it.

This follows delta-spark's ``ConflictChecker`` check by check: protocol,
metadata (with the feature enablements it tolerates,
:mod:`.metadata_conflicts`), domain metadata, files added to data we read, files removed that we
read or also remove, and ``txn`` application ids we depend on. A transaction
whose checks all pass against every winning commit is retried at the next
version; the first failing check raises its typed error.

Two things differ from delta-spark on purpose, neither changing whether a
conflict exists: when a winner removed a file that we both read and remove,
we report ``ConcurrentDeleteDeleteError`` (the more specific diagnosis) where
delta-spark reports a delete-read; and an empty commit that read nothing
(VACUUM START and END) only checks that the winner's protocol is one we can
write, since nothing it could change bears on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.table_features import gate as features
from airflow_delta_provider.delta.transaction import metadata_conflicts

if TYPE_CHECKING:
    from airflow_delta_provider.delta.scan.skipping import Predicate


#: Operations that only append when they only add files (see WinningCommit.is_blind_append).
_PLAIN_WRITES = frozenset({"WRITE", "STREAMING UPDATE"})


@dataclass
class WinningCommit:
    """What a concurrent commit changed, summarised for the checks."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    txn_app_ids: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    commit_info: CommitInfo | None = None

    @classmethod
    def from_actions(cls, version: int, actions: Iterable[Action]) -> WinningCommit:
        w = cls(version)
        for a in actions:
            if isinstance(a, AddFile):
                w.adds.append(a)
            elif isinstance(a, RemoveFile):
                w.removes.append(a)
            elif isinstance(a, Metadata):
                w.metadata = a
            elif isinstance(a, Protocol):
                w.protocol = a
            elif isinstance(a, Txn):
                w.txn_app_ids.add(a.app_id)
            elif isinstance(a, DomainMetadata):
                w.domains.add(a.domain)
            elif isinstance(a, CommitInfo):
                w.commit_info = a
        return w

    @property
    def is_blind_append(self) -> bool:
        """As its ``commitInfo`` says. delta-rs leaves the flag out; a commit
        without it is a blind append when it is a plain write (``WRITE`` or
        ``STREAMING UPDATE``) that only adds files, and not otherwise (as
        delta-spark treats a commit that does not say)."""
        info = self.commit_info.raw if self.commit_info else {}
        if "isBlindAppend" in info:
            return bool(info["isBlindAppend"])
        plain = self.commit_info is not None and self.commit_info.operation in _PLAIN_WRITES
        return plain and bool(self.adds) and not self.removes and self.metadata is None

    def added_files_to_check(self, isolation_level: str, changes_metadata: bool) -> list[AddFile]:
        """The adds a reader at ``isolation_level`` must not have missed
        (delta-spark's ``checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn``):
        every add, except that ``WriteSerializable`` lets a blind append's
        through unless the reader changes the metadata, and
        ``SnapshotIsolation`` checks none."""
        if isolation_level == table_properties.SNAPSHOT_ISOLATION:
            return []
        if self.is_blind_append and isolation_level == table_properties.WRITE_SERIALIZABLE and not changes_metadata:
            return []
        return list(self.adds)

    @property
    def operation(self) -> str:
        return (self.commit_info.operation if self.commit_info else None) or "unknown operation"

    @property
    def identity_only_metadata_update(self) -> bool:
        """The commit changed metadata only to move identity high-water marks
        (delta-spark's ``delta.identity.schemaUpdate`` commit tag)."""
        from airflow_delta_provider.delta.table_features.identity_columns import COMMIT_TAG

        tags = (self.commit_info.raw.get("tags") if self.commit_info else None) or {}
        return isinstance(tags, dict) and str(tags.get(COMMIT_TAG, "")).lower() == "true"


@dataclass
class ReadSet:
    """What the current transaction read and is about to write."""

    read_version: int | None
    isolation_level: str
    is_blind_append: bool
    read_whole_table: bool
    read_predicates: list[Predicate]
    read_paths: set[str]
    removed_paths: set[str]
    read_app_ids: set[str]
    changes_metadata: bool
    changes_protocol: bool
    domains: set[str]
    schema: dict[str, Any]
    partition_columns: list[str]
    canonical: Callable[[str], str]
    is_empty: bool = False
    mapping_mode: str = "none"
    #: The metadata and protocol read (updated past winners whose metadata
    #: change was tolerated, as delta-spark does), for :mod:`.metadata_conflicts`.
    metadata: Metadata | None = None
    protocol: Protocol | None = None


def check_conflicts(current: ReadSet, winner: WinningCommit) -> None:
    """Raise the delta-spark conflict that ``winner`` causes for ``current``, if any."""
    where = f"version {winner.version} ({winner.operation})"

    # 1. Protocol.
    if winner.protocol is not None:
        if current.read_version is None:
            raise ProtocolChangedError(f"the table was created concurrently at {where}", winner.version)
        try:
            features.check_writable(winner.protocol, winner.metadata)
        except UnsupportedFeatureError as exc:
            raise ProtocolChangedError(f"the protocol changed at {where}: {exc}", winner.version) from exc
        if current.changes_protocol:
            raise ProtocolChangedError(f"the protocol changed at {where}", winner.version)
        current.protocol = winner.protocol

    if current.is_empty:
        return

    # 2. Metadata: a concurrent change aborts us, unless we change no
    # metadata and it only moved identity high-water marks or turned on a
    # feature that files written before it respect (delta-spark's
    # ``attemptToResolveMetadataConflicts``).
    if winner.metadata is not None and not _tolerated_metadata_change(current, winner):
        raise MetadataChangedError(f"the table metadata changed at {where}", winner.version)

    # 3. Domain metadata.
    overlap = current.domains & winner.domains
    if overlap:
        raise ConcurrentTransactionError(
            f"metadata domain(s) {sorted(overlap)} were changed concurrently at {where}", winner.version
        )

    # 5. Files added to data we read.
    if not current.is_blind_append:
        adds = winner.added_files_to_check(current.isolation_level, current.changes_metadata)
        _check_added_files(current, adds, where, winner.version)

    # 7. Files we remove, removed concurrently (before 6: see the module docstring).
    winner_removed = {current.canonical(r.path) for r in winner.removes}
    both = winner_removed & current.removed_paths
    if both:
        raise ConcurrentDeleteDeleteError(
            f"file {sorted(both)[0]} was removed concurrently at {where}, and this transaction removes it too",
            winner.version,
        )

    # 6. Files we read, removed concurrently.
    read_removed = winner_removed & current.read_paths
    if read_removed:
        raise ConcurrentDeleteReadError(
            f"file {sorted(read_removed)[0]}, which this transaction read, was removed concurrently at {where}",
            winner.version,
        )
    if winner_removed and current.read_whole_table:
        raise ConcurrentDeleteReadError(
            f"files were removed concurrently at {where} from a table this transaction read whole",
            winner.version,
        )

    # 4. Application transactions we depend on.
    apps = current.read_app_ids & winner.txn_app_ids
    if apps:
        raise ConcurrentTransactionError(
            f"application transaction(s) {sorted(apps)} committed concurrently at {where}", winner.version
        )


def _tolerated_metadata_change(current: ReadSet, winner: WinningCommit) -> bool:
    assert winner.metadata is not None
    if current.changes_metadata:
        return False
    if winner.identity_only_metadata_update:
        return True
    if current.metadata is None or current.protocol is None:
        return False
    if not metadata_conflicts.tolerable(current.metadata, winner.metadata, current.protocol):
        return False
    current.metadata = winner.metadata  # later winners are compared with it
    return True


def _check_added_files(current: ReadSet, adds: list[AddFile], where: str, version: int) -> None:
    if not adds:
        return
    if current.read_whole_table or not current.partition_columns:
        if current.read_whole_table or current.read_predicates:
            raise ConcurrentAppendError(
                f"files were added concurrently at {where} to data this transaction read", version
            )
        return
    from airflow_delta_provider.delta.scan.skipping import prune_files

    # Only partition values decide (delta-spark matches read predicates
    # against the partitions of added files), so stats are dropped.
    bare = [replace(a, stats=None, stats_parsed=None) for a in adds]
    for predicate in current.read_predicates:
        hit = prune_files(bare, predicate, current.schema, current.partition_columns, mapping_mode=current.mapping_mode)
        if hit:
            raise ConcurrentAppendError(
                f"files were added concurrently at {where} to partition "
                f"{_partition_text(hit[0], current)} that this transaction read (condition: {predicate.sql})",
                version,
            )


def _partition_text(add: AddFile, current: ReadSet) -> str:
    """The partition of ``add`` by logical column names."""
    from airflow_delta_provider.delta.table_features.column_mapping import MODE_KEY, ColumnMapping

    mapping = ColumnMapping.of(current.schema, {MODE_KEY: current.mapping_mode})
    values = mapping.logical_partition_values(add.partition_values, current.partition_columns)
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "(unpartitioned)"
