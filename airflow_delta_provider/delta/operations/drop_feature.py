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
- ``vacuumProtocolCheck``: nothing to prepare.

Reader-writer features, whose drop needs the history barrier
(``checkpointProtection``) or the wait for the log retention, are refused
with :class:`UnsupportedFeatureError` naming them; features delta-spark cannot
drop are refused by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.table_features import check_constraints, in_commit_timestamps
from airflow_delta_provider.delta.table_features import features as F

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.delta.transaction.transaction import CommitResult

#: Reader-writer features delta-spark drops behind a history barrier; not yet here.
NEEDS_HISTORY_BARRIER = frozenset(
    {
        F.DELETION_VECTORS,
        F.V2_CHECKPOINT,
        F.COLUMN_MAPPING,
        F.ROW_TRACKING,
        F.DOMAIN_METADATA,
        F.CHECKPOINT_PROTECTION,
        *F.TYPE_WIDENING_FEATURES,
    }
)


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


#: Each writer-only feature we drop, and its pre-downgrade step.
PREPARE: dict[str, Callable[[DeltaTable, Snapshot], Snapshot]] = {
    F.CHECK_CONSTRAINTS: _no_constraints,
    F.IN_COMMIT_TIMESTAMP: _disable_in_commit_timestamps,
    F.VACUUM_PROTOCOL_CHECK: lambda table, snapshot: snapshot,
}


def drop_feature(table: DeltaTable, change: DropFeature, *, token: str | None = None) -> CommitResult:
    """Drop ``change.name`` from ``table``'s protocol; the downgrade commit.
    Refusals raise before anything is written."""
    snapshot = table.snapshot()
    readers, writers = F.listed_features(snapshot.protocol)
    name = change.name
    if name not in readers | writers:
        raise InvalidInputError(f"cannot drop {name}: the table's protocol does not list it")
    if name in NEEDS_HISTORY_BARRIER:
        raise UnsupportedFeatureError(
            f"dropping {name} needs delta-spark's history barrier (checkpointProtection) or the wait for the "
            "log retention; it is not implemented yet"
        )
    prepare = PREPARE.get(name)
    if prepare is None:
        raise InvalidInputError(f"{name} cannot be dropped: delta-spark marks it non-removable")
    if change.truncate_history:
        raise InvalidInputError(
            f"truncate_history applies only to features whose drop truncates the history; {name} is a "
            "writer-only feature and is dropped at once"
        )
    snapshot = prepare(table, snapshot)
    txn = table.transaction(change.operation, change.parameters(), snapshot)
    txn.update_protocol(F.without_feature(snapshot.protocol, name))
    conf = {k: v for k, v in snapshot.configuration.items() if k != f"delta.feature.{name}"}
    txn.update_metadata(_configured(snapshot.metadata, conf))
    return txn.commit(metrics={}, token=token)


def _configured(metadata: Metadata, configuration: dict[str, str]) -> Metadata:
    return replace(metadata, configuration=configuration)
