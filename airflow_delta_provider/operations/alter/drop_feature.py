"""ALTER TABLE ... DROP FEATURE, for writer-only features (delta-spark's
``AlterTableDropFeatureDeltaCommand``).

A writer-only feature leaves no trace a reader needs, so delta-spark drops
it at once: its pre-downgrade command (``PreDowngradeTableFeatureCommand``)
removes the feature's traces from the latest version, in a commit of its
own when there are any, then one ``DROP FEATURE`` commit writes the protocol
without it (normalized: a legacy protocol when the features left are exactly
one) and the metadata without the properties that name it. No history
wait and no truncation: ``truncate_history`` is refused for them, as
delta-spark refuses it.

Covered here:

- ``checkConstraints``: refused while the table has CHECK constraints, naming
  them (delta-spark's ``CheckConstraintsPreDowngradeTableFeatureCommand``:
  dropping a feature never changes what the table means; drop them first);
- ``inCommitTimestamp``: the preparation commit sets
  ``delta.enableInCommitTimestamps=false`` and removes the enablement
  version and timestamp (``InCommitTimestampsPreDowngradeCommand``);
- ``vacuumProtocolCheck``: nothing to prepare;
- ``rowTracking``: the preparation turns it off and suspends it, then
  re-adds the live files without row ids (``RowTrackingPreDowngradeCommand``,
  ``ROW TRACKING UNBACKFILL``); the downgrade commit removes its properties
  and its ``delta.rowTracking`` domain.

A reader-writer feature's traces stay in the history, so delta-spark's
fast drop (``executeDropFeatureWithCheckpointProtection``) puts a barrier
before its downgrade: after the preparation, three empty commits each with a
checkpoint (``NUMBER_OF_BARRIER_CHECKPOINTS``), then one commit that drops
the feature, adds ``checkpointProtection`` and sets
``delta.requireCheckpointProtectionBeforeVersion`` to its own version (no
checkpoint may be written below it, and log cleanup takes the history
before it whole), then a checkpoint of the downgraded version. The invariant
(no trace of the feature) is checked on the version the downgrade reads, and
the downgrade transaction reads the whole table, so a concurrent commit that
changes data (a file with a deletion vector) conflicts instead of landing
under a protocol without the feature, as delta-spark re-checks inside its
downgrade transaction. Covered:

- ``v2Checkpoint``: the preparation sets ``delta.checkpointPolicy=classic``
  (``V2CheckpointPreDowngradeCommand``), so the barrier checkpoints are
  classic ones; the drop is refused if the version read still depends on a
  V2 checkpoint (``validateDropInvariants``).

With ``truncate_history`` a reader-writer feature is dropped as delta-spark's
``executeDropFeatureWithHistoryTruncation`` does, with no barrier: the
preparation and a checkpointed empty commit; if the latest version used the
feature (delta-spark's ``performedChanges = tracesFound``: a commit of vector
tombstones alone does not count) the drop stops there, asking to wait for
``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours); run again,
the expired history is deleted (cut to the minute), and while a remaining
version still uses the feature the drop is refused, saying how long to wait.

- ``deletionVectors``: the preparation unsets ``delta.enableDeletionVectors``,
  rewrites every file that has a deletion vector (REORG PURGE) and adds a
  tombstone for each vector file that an unexpired tombstone still refers to
  (``Deletion Vector Tombstones``), so that a client that knows nothing of
  vectors never vacuums one away (``DeletionVectorsPreDowngradeCommand``);
  the drop is refused while a file has a vector or the property is on.
- ``typeWidening`` (and ``typeWidening-preview``): the preparation unsets
  ``delta.enableTypeWidening``, rewrites every file whose Parquet type of a
  widened column is narrower than the table's, then removes the
  ``delta.typeChanges`` field metadata in a ``DROP FEATURE`` metadata commit
  (``TypeWideningPreDowngradeCommand``).

Both rewrites need an engine: the caller passes ``rewrite`` (the Spark alter
command passes REORG's, :func:`airflow_delta_provider.operations.reorg.spark.file_rewriter`);
without one, a drop that has files to rewrite is refused before anything
is written.

Other features delta-spark can drop (``columnMapping``, ``domainMetadata``,
``checkpointProtection``, ...) are refused with :class:`UnsupportedFeatureError`
naming them; features delta-spark cannot drop are refused by name
(:func:`check_removable`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.deletion_vectors import relative_dv_path
from airflow_delta_provider.delta.actions.model import (
    Action,
    AddCDCFile,
    AddFile,
    DeletionVector,
    Metadata,
    RemoveFile,
    parse_commit,
)
from airflow_delta_provider.delta.checkpoint import writer
from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.footers import files_with_narrower_types
from airflow_delta_provider.delta.partitions import encode_path, relative_to_root
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.schema.widening import all_changes
from airflow_delta_provider.delta.table_features import (
    check_constraints,
    in_commit_timestamps,
    row_tracking,
    type_widening,
    v2_checkpoint,
)
from airflow_delta_provider.delta.table_features import features as F

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.delta.transaction.transaction import CommitResult

#: delta-spark's ``NUMBER_OF_BARRIER_CHECKPOINTS``.
BARRIER_CHECKPOINTS = 3

#: Features delta-spark can drop (its ``RemovableFeature``s in ``TableFeature.scala``)
#: that are not dropped here yet.
NOT_YET_DROPPED = frozenset(
    {
        F.COLUMN_MAPPING,
        F.DOMAIN_METADATA,
        F.CHECKPOINT_PROTECTION,
        "materializePartitionColumns",
        "coordinatedCommits-preview",
        "catalogManaged",
        "redirectReaderWriter-preview",
        "redirectWriterOnly-preview",
    }
)

#: An engine's rewrite of data files with ``dataChange=false`` (REORG): it
#: takes the snapshot and the files, commits, and returns the version.
FileRewrite = Callable[["Snapshot", list[AddFile]], "int | None"]


@dataclass(frozen=True)
class DropFeature:
    """``{"drop_feature": {"name": ..., "truncate_history": false}}``."""

    name: str
    truncate_history: bool = False
    operation = "DROP FEATURE"

    def parameters(self) -> dict[str, Any]:
        return {"featureName": self.name, "truncateHistory": self.truncate_history}


def _no_constraints(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    names = sorted(check_constraints.table_constraints(snapshot.metadata))
    if names:
        raise InvalidInputError(
            f"cannot drop checkConstraints: the table has CHECK constraint(s) {', '.join(names)}; "
            "drop them first (dropping a feature never changes what the table means)"
        )
    return snapshot


def _disable_in_commit_timestamps(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    """The preparation commit: ICT off, its enablement properties gone."""
    conf = snapshot.configuration
    enabled = table_properties.in_commit_timestamps_enabled(snapshot.metadata)
    provenance = [k for k in in_commit_timestamps.ENABLEMENT_KEYS if k in conf]
    if not enabled and not provenance:
        return snapshot
    new = {k: v for k, v in conf.items() if k not in provenance}
    if enabled:
        new[table_properties.ENABLE_IN_COMMIT_TIMESTAMPS] = "false"
    keys = [*provenance, *([table_properties.ENABLE_IN_COMMIT_TIMESTAMPS] if enabled else [])]
    txn = table.transaction("UNSET TBLPROPERTIES", {"properties": keys, "ifExists": True}, snapshot)
    txn.update_metadata(_configured(snapshot.metadata, new))
    txn.commit(metrics={})
    return table.snapshot()


def _classic_checkpoint_policy(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    """The preparation commit of ``v2Checkpoint``: ``delta.checkpointPolicy=classic``."""
    if not v2_checkpoint.is_required(snapshot.metadata):
        return snapshot
    conf = {**snapshot.configuration, table_properties.CHECKPOINT_POLICY: table_properties.CHECKPOINT_POLICY_CLASSIC}
    txn = table.transaction(
        "SET TBLPROPERTIES", {"properties": {table_properties.CHECKPOINT_POLICY: "classic"}}, snapshot
    )
    txn.update_metadata(_configured(snapshot.metadata, conf))
    txn.commit(metrics={})
    return table.snapshot()


def _suspend_and_unbackfill_row_tracking(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    """delta-spark's ``RowTrackingPreDowngradeCommand``: ``delta.enableRowTracking=false``
    and ``delta.rowTrackingSuspended=true`` (no new row ids), then the live
    files re-added without theirs (``ROW TRACKING UNBACKFILL``)."""
    conf = snapshot.configuration
    wanted = {table_properties.ENABLE_ROW_TRACKING: "false", table_properties.ROW_TRACKING_SUSPENDED: "true"}
    if any(conf.get(k) != v for k, v in wanted.items()):
        txn = table.transaction("SET TBLPROPERTIES", {"properties": wanted}, snapshot)
        txn.update_metadata(_configured(snapshot.metadata, {**conf, **wanted}))
        txn.commit(metrics={})
        snapshot = table.snapshot()
    tracked = [f for f in snapshot.files if f.base_row_id is not None or f.default_row_commit_version is not None]
    if tracked:
        txn = table.transaction("ROW TRACKING UNBACKFILL", {}, snapshot)
        txn.read_files(tracked)
        txn.add_all(
            [
                replace(f, data_change=False, base_row_id=None, default_row_commit_version=None, stats=f.stats_json())
                for f in tracked
            ]
        )
        txn.commit(metrics={"numUnbackfilledFiles": len(tracked)})
        snapshot = table.snapshot()
    return snapshot


def _no_v2_checkpoint_needed(snapshot: Snapshot) -> bool:
    """delta-spark's ``validateDropInvariants`` for ``v2Checkpoint``: the
    policy is classic and the version read rests on no V2 checkpoint."""
    on_v2 = any(f.kind == "v2checkpoint" for f in snapshot.segment.checkpoint_files)
    return not v2_checkpoint.is_required(snapshot.metadata) and not on_v2


def _unset(table: DeltaTable, snapshot: Snapshot, keys: list[str]) -> Snapshot:
    """An ``UNSET TBLPROPERTIES`` commit of those of ``keys`` the table sets."""
    present = [k for k in keys if k in snapshot.configuration]
    if not present:
        return snapshot
    txn = table.transaction("UNSET TBLPROPERTIES", {"properties": present, "ifExists": True}, snapshot)
    txn.update_metadata(
        _configured(snapshot.metadata, {k: v for k, v in snapshot.configuration.items() if k not in present})
    )
    txn.commit(metrics={})
    return table.snapshot()


def _needs_engine(name: str, files: list[AddFile], why: str, rewrite: FileRewrite | None) -> None:
    if files and rewrite is None:
        raise InvalidInputError(
            f"dropping {name} rewrites {len(files)} data file(s) {why}: it needs Spark (not engine=python)"
        )


def _purge_deletion_vectors(table: DeltaTable, snapshot: Snapshot, rewrite: FileRewrite | None) -> Snapshot:
    """delta-spark's ``DeletionVectorsPreDowngradeCommand``: no new vectors,
    the files with one rewritten, then tombstones for the vector files that
    unexpired tombstones refer to."""
    with_vectors = [f for f in snapshot.files if f.deletion_vector is not None]
    _needs_engine(F.DELETION_VECTORS, with_vectors, "that have deletion vectors", rewrite)
    snapshot = _unset(table, snapshot, [table_properties.ENABLE_DELETION_VECTORS])
    with_vectors = [f for f in snapshot.files if f.deletion_vector is not None]
    if with_vectors:
        assert rewrite is not None
        rewrite(snapshot, with_vectors)
        snapshot = table.snapshot()
    return _deletion_vector_tombstones(table, snapshot)


def _deletion_vector_tombstones(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    """delta-spark's ``generateDVTombstones``: a ``remove`` (``dataChange=false``)
    for each vector file an unexpired tombstone refers to and no tombstone names yet.

    A ``u`` vector's file and a ``p`` (absolute) one under the table root are
    named by their relative, URI-encoded path (delta-spark relativizes them);
    a ``p`` file outside the root keeps its absolute path."""
    tombstones = snapshot.tombstones
    named = {r.path for r in tombstones if r.deletion_vector is None}
    wanted = set()
    for r in tombstones:
        path = _dv_tombstone_path(table.root, r.deletion_vector) if r.deletion_vector is not None else None
        if path is not None and path not in named:
            wanted.add(path)
    if not wanted:
        return snapshot
    now = int(time.time() * 1000)
    txn = table.transaction("Deletion Vector Tombstones", {}, snapshot)
    txn.add_all(RemoveFile(path, deletion_timestamp=now, data_change=False) for path in sorted(wanted))
    txn.commit(metrics={"dvTombstonesWithinRetentionPeriod": len(wanted)})
    return table.snapshot()


def _dv_tombstone_path(table_root: str, dv: DeletionVector) -> str | None:
    """The path a tombstone of ``dv``'s file carries, as the log spells paths; None for an inline vector."""
    if dv.storage_type == "u":
        return encode_path(relative_dv_path(dv))
    if dv.storage_type == "p":
        rel = relative_to_root(table_root, dv.path_or_inline_dv)
        return encode_path(rel) if rel is not None else dv.path_or_inline_dv
    return None


def _no_deletion_vectors(snapshot: Snapshot) -> bool:
    """delta-spark's ``validateDropInvariants``: none can be written, none is live."""
    off = not table_properties.deletion_vectors_enabled(snapshot.metadata)
    return off and not any(f.deletion_vector is not None for f in snapshot.files)


def _uses_deletion_vectors(action: Action) -> bool:
    """delta-spark's ``actionUsesFeature`` for ``deletionVectors``."""
    if isinstance(action, Metadata):
        return table_properties.deletion_vectors_enabled(action)
    return (
        isinstance(action, (AddFile, RemoveFile, AddCDCFile)) and getattr(action, "deletion_vector", None) is not None
    )


def _narrow_type_widening(table: DeltaTable, snapshot: Snapshot, rewrite: FileRewrite | None) -> Snapshot:
    """delta-spark's ``TypeWideningPreDowngradeCommand``: no new type changes,
    the files with a narrower Parquet type rewritten, then the
    ``delta.typeChanges`` metadata removed."""
    narrow = files_with_narrower_types(table.storage, snapshot)
    _needs_engine(F.TYPE_WIDENING_FEATURE, narrow, "narrower than the table's types", rewrite)
    snapshot = _unset(table, snapshot, [table_properties.ENABLE_TYPE_WIDENING])
    narrow = files_with_narrower_types(table.storage, snapshot)
    if narrow:
        assert rewrite is not None
        rewrite(snapshot, narrow)
        snapshot = table.snapshot()
    changes = all_changes(snapshot.schema)
    if changes:
        columns = sorted({".".join(path) for path, _change in changes})
        txn = table.transaction("DROP FEATURE", {"columns": columns}, snapshot)
        schema = type_widening.strip(snapshot.schema)
        txn.update_metadata(replace(snapshot.metadata, schema_string=schema_string(schema)))
        txn.commit(metrics={})
        snapshot = table.snapshot()
    return snapshot


def _no_type_changes(snapshot: Snapshot) -> bool:
    return not table_properties.type_widening_enabled(snapshot.metadata) and not all_changes(snapshot.schema)


def _uses_type_widening(action: Action) -> bool:
    return isinstance(action, Metadata) and bool(all_changes(action.schema_json))


def _uses_v2_checkpoints(action: Action) -> bool:
    return isinstance(action, Metadata) and v2_checkpoint.is_required(action)


#: Each feature we drop, and its pre-downgrade step.
PREPARE: dict[str, Callable[[DeltaTable, Snapshot], Snapshot]] = {
    F.CHECK_CONSTRAINTS: _no_constraints,
    F.IN_COMMIT_TIMESTAMP: _disable_in_commit_timestamps,
    F.VACUUM_PROTOCOL_CHECK: lambda table, snapshot: snapshot,
    F.V2_CHECKPOINT: _classic_checkpoint_policy,
    F.ROW_TRACKING: _suspend_and_unbackfill_row_tracking,
}
#: Those whose pre-downgrade step rewrites data files (with the engine's ``rewrite``).
PREPARE_WITH_REWRITE: dict[str, Callable[[DeltaTable, Snapshot, FileRewrite | None], Snapshot]] = {
    F.DELETION_VECTORS: _purge_deletion_vectors,
    **dict.fromkeys(F.TYPE_WIDENING_FEATURES, _narrow_type_widening),
}
#: What the downgrade commit of a feature also removes (delta-spark's
#: ``tablePropertiesToRemoveAtDowngradeCommit``, ``actionsToIncludeAtDowngradeCommit``).
DOWNGRADE_PROPERTIES: dict[str, tuple[str, ...]] = {
    F.ROW_TRACKING: (
        table_properties.ENABLE_ROW_TRACKING,
        table_properties.ROW_TRACKING_SUSPENDED,
        *row_tracking.MATERIALIZED_KEYS,
    )
}
DOWNGRADE_DOMAINS: dict[str, str] = {F.ROW_TRACKING: row_tracking.DOMAIN}
#: The features among them whose history needs the barrier, and the check
#: that the latest version no longer uses them (``validateDropInvariants``).
HISTORY_PROTECTED: dict[str, Callable[[Snapshot], bool]] = {
    F.V2_CHECKPOINT: _no_v2_checkpoint_needed,
    F.DELETION_VECTORS: _no_deletion_vectors,
    **dict.fromkeys(F.TYPE_WIDENING_FEATURES, _no_type_changes),
}
#: Whether an action of the history uses the feature (``actionUsesFeature``).
USES: dict[str, Callable[[Action], bool]] = {
    F.V2_CHECKPOINT: _uses_v2_checkpoints,
    F.DELETION_VECTORS: _uses_deletion_vectors,
    **dict.fromkeys(F.TYPE_WIDENING_FEATURES, _uses_type_widening),
}


def check_removable(name: str) -> None:
    """Refuse, naming it, a feature that is not dropped here: one delta-spark
    cannot drop either (InvalidInputError), or one it can that is not
    implemented yet (UnsupportedFeatureError)."""
    if name in PREPARE or name in PREPARE_WITH_REWRITE:
        return
    if name in NOT_YET_DROPPED:
        raise UnsupportedFeatureError(
            f"dropping {name} is not implemented yet (delta-spark can drop it; airflow-delta-provider "
            f"drops {', '.join(sorted({*PREPARE, *PREPARE_WITH_REWRITE}))})"
        )
    raise InvalidInputError(f"{name} cannot be dropped: delta-spark marks it non-removable")


def drop_feature(
    table: DeltaTable, change: DropFeature, *, token: str | None = None, rewrite: FileRewrite | None = None
) -> CommitResult:
    """Drop ``change.name`` from ``table``'s protocol; the downgrade commit.
    ``rewrite``: the engine's file rewrite, for the features whose
    preparation rewrites data files. Refusals raise before anything is written."""
    snapshot = table.snapshot()
    readers, writers = F.listed_features(snapshot.protocol)
    name = change.name
    if name not in readers | writers:
        raise InvalidInputError(f"cannot drop {name}: the table's protocol does not list it")
    check_removable(name)
    prepare = PREPARE.get(name) or functools.partial(_with_rewrite, PREPARE_WITH_REWRITE[name], rewrite)
    protected = name in HISTORY_PROTECTED
    if change.truncate_history:
        if protected:
            return _drop_truncating_history(table, snapshot, change, prepare, token)
        raise InvalidInputError(
            f"truncate_history applies only to features whose drop truncates the history; {name} is a "
            "writer-only feature and is dropped at once"
        )
    snapshot = prepare(table, snapshot)
    if protected:
        snapshot = _barrier(table, snapshot)
        if not HISTORY_PROTECTED[name](snapshot):
            raise InvalidInputError(f"cannot drop {name}: the latest version still uses it (a concurrent change?)")
    txn = table.transaction(change.operation, change.parameters(), snapshot)
    txn.read_whole_table()  # the invariant held at the version read: any concurrent data change conflicts
    dropped = {f"delta.feature.{name}", *DOWNGRADE_PROPERTIES.get(name, ())}
    conf = {k: v for k, v in snapshot.configuration.items() if k not in dropped}
    domain = snapshot.domain_metadata.get(DOWNGRADE_DOMAINS.get(name, ""))
    if domain is not None:
        txn.remove_domain(domain)
    if protected:
        txn.update_protocol(F.without_feature(snapshot.protocol, name, adding=F.CHECKPOINT_PROTECTION))
        conf[table_properties.CHECKPOINT_PROTECTION_VERSION] = str(snapshot.version + 1)
    else:
        txn.update_protocol(F.without_feature(snapshot.protocol, name))
    txn.update_metadata(_configured(snapshot.metadata, conf))
    result = txn.commit(metrics={}, token=token)
    if protected:
        writer.write_checkpoint(table, table.snapshot(result.version))
    return result


def _drop_truncating_history(
    table: DeltaTable,
    snapshot: Snapshot,
    change: DropFeature,
    prepare: Callable[[DeltaTable, Snapshot], Snapshot],
    token: str | None,
) -> CommitResult:
    """delta-spark's ``executeDropFeatureWithHistoryTruncation``: remove the
    feature's traces, checkpoint an empty commit; if that took a change, the
    caller must wait for the truncation retention and run again. Then cut the
    expired history (to the minute), refuse while a remaining version uses
    the feature, and downgrade."""
    name = change.name
    # delta-spark's performedChanges = tracesFound: the feature in use before the preparation
    # (a commit that only adds deletion vector tombstones asks for no wait).
    made_changes = not HISTORY_PROTECTED[name](snapshot)
    prepared = prepare(table, snapshot)
    table.transaction("Empty Commit", {}, prepared).commit(metrics={})
    snapshot = table.snapshot()
    writer.write_checkpoint(table, snapshot)
    retention = table_properties.truncate_history_retention_ms(snapshot.metadata)
    hours = retention / 3_600_000
    if made_changes:
        raise InvalidInputError(
            f"dropping {name} was partly done: the latest version no longer uses it, but older versions "
            f"do. Wait {hours:g} hours ({table_properties.TRUNCATE_HISTORY_RETENTION}) for them to expire, "
            "then run the drop again with truncate_history"
        )
    if not HISTORY_PROTECTED[name](snapshot):
        raise InvalidInputError(f"cannot drop {name}: the latest version still uses it (a concurrent change?)")
    cleanup_expired_logs(table, snapshot, retention_ms=retention, granularity_ms=60_000)
    still = _versions_using(table, name, snapshot.version)
    if still:
        raise InvalidInputError(
            f"cannot drop {name} yet: {_span(still)} of the history still uses it. Wait until "
            f"it is {hours:g} hours old ({table_properties.TRUNCATE_HISTORY_RETENTION}), then run the drop "
            "again with truncate_history"
        )
    txn = table.transaction(change.operation, change.parameters(), snapshot)
    txn.read_whole_table()  # as above: a concurrent data change (a new vector) conflicts
    txn.update_protocol(F.without_feature(snapshot.protocol, name))
    conf = {k: v for k, v in snapshot.configuration.items() if k != f"delta.feature.{name}"}
    txn.update_metadata(_configured(snapshot.metadata, conf))
    return txn.commit(metrics={}, token=token)


def _with_rewrite(
    step: Callable[[DeltaTable, Snapshot, FileRewrite | None], Snapshot],
    rewrite: FileRewrite | None,
    table: DeltaTable,
    snapshot: Snapshot,
) -> Snapshot:
    return step(table, snapshot, rewrite)


def _span(versions: list[int]) -> str:
    return f"version {versions[0]}" if len(versions) == 1 else f"versions {versions[0]} to {versions[-1]}"


def _versions_using(table: DeltaTable, name: str, upto: int) -> list[int]:
    """The remaining versions whose commit or checkpoint uses feature ``name``
    (delta-spark's ``historyContainsFeature``): a commit with an action that
    uses it (:data:`USES`), or a V2 checkpoint file for ``v2Checkpoint``."""
    store = table.log_store
    uses = USES[name]
    out = []
    for f in store.list_from(0):
        if f.version > upto:
            continue
        checkpoint = f.kind == "v2checkpoint" and name == F.V2_CHECKPOINT
        if checkpoint or (f.kind == "commit" and any(uses(a) for a in parse_commit(store.read(f.name)))):
            out.append(f.version)
    return sorted(set(out))


def _barrier(table: DeltaTable, snapshot: Snapshot) -> Snapshot:
    """delta-spark's barrier: empty commits, each checkpointed, so that no
    reader replays the history before them."""
    for _ in range(BARRIER_CHECKPOINTS):
        table.transaction("Empty Commit", {}, snapshot).commit(metrics={})
        snapshot = table.snapshot()
        writer.write_checkpoint(table, snapshot)
    return snapshot


def _configured(metadata: Metadata, configuration: dict[str, str]) -> Metadata:
    return replace(metadata, configuration=configuration)
