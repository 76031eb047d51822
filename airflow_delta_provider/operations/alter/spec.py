"""ALTER's arguments: the one declaration of its options."""

from __future__ import annotations

import json
from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.alter.changes import ALTER_CHANGES
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
    switch,
)

#: Features whose drop rewrites data files, so ALTER needs Spark (``drop_feature.PREPARE_WITH_REWRITE``;
#: the spec stays light for DAG parsing, and a test checks the two agree).
REWRITING_DROPS = ("deletionVectors", "typeWidening", "typeWidening-preview")


@dataclass(frozen=True, kw_only=True)
class AlterSpec(OperationSpec):
    operation = "alter"
    summary = "ALTER TABLE: one schema or property change"
    runs_without_spark = True  # except to add a CHECK constraint (needs_spark)
    exactly_one_of = ("change", "drop_feature")

    change: str | None = option(
        templated=True,
        renderer="json",
        json_text=True,
        help='the change as JSON, e.g. {"rename_column": {"column": "a", "to": "b"}}, {"drop_columns": ["a"]}, '
        '{"add_columns": [{"name": "c", "type": "long"}]}, {"alter_column": {"column": "c", "comment": "..."}}, '
        '{"set_properties": {"k": "v"}}, {"unset_properties": ["k"]}, '
        '{"add_constraint": {"name": "positive", "expression": "amount > 0"}} (checks the rows: needs Spark), '
        '{"drop_constraint": {"name": "positive", "if_exists": true}}, {"cluster_by": ["a", "b"]}, '
        '{"cluster_by": "none"}, {"drop_feature": {"name": "inCommitTimestamp", "truncate_history": false}} '
        "(checkConstraints, inCommitTimestamp, vacuumProtocolCheck, rowTracking, v2Checkpoint; "
        "deletionVectors and typeWidening rewrite data files: need Spark)",
    )
    drop_feature: str | None = option(
        templated=True,
        metavar="NAME",
        help="drop a table feature (ALTER TABLE ... DROP FEATURE NAME): "
        '--change \'{"drop_feature": {"name": NAME}}\' in short',
    )
    truncate_history: bool = switch(
        help="with --drop-feature: truncate the history (DROP FEATURE ... TRUNCATE HISTORY) instead of "
        "protecting it with checkpointProtection, in two runs: the first removes the feature's traces and asks "
        "to run again after delta.dropFeatureTruncateHistory.retentionDuration (24 hours)"
    )
    enable_column_mapping: bool = switch(
        help="turn column mapping on (mode name) in the same commit when RENAME or DROP needs it"
    )

    def validate(self) -> None:
        super().validate()
        if self.truncate_history and self.drop_feature is None:
            raise InvalidArgumentError(
                "alter: truncate_history goes with drop_feature (with change, it is the drop_feature change's "
                'own key: {"drop_feature": {"name": ..., "truncate_history": true}})'
            )
        if self.change is not None:
            try:
                change = json.loads(self.change)
            except json.JSONDecodeError as exc:
                raise InvalidArgumentError(f"the change is not JSON: {exc}") from None
            if not isinstance(change, dict):
                raise InvalidArgumentError('the change must be a JSON object, e.g. {"drop_columns": ["a"]}')
            kinds = [kind for kind in change if kind in ALTER_CHANGES]
            if len(kinds) != 1:
                raise InvalidArgumentError(f"change must name exactly one of {ALTER_CHANGES}, got {sorted(change)}")

    def requires_spark(self) -> bool:
        return self.needs_spark()

    def spark_reason(self) -> str:
        if self.drop_feature is not None or "drop_feature" in (self.change or ""):
            dropped = self.drop_feature or _dropped(self.change)
            return f"dropping {dropped} rewrites data files"
        return "adding a CHECK constraint checks the table's rows"

    def needs_spark(self) -> bool:
        """Adding a CHECK constraint (Spark checks the table's rows), and
        dropping a feature whose preparation rewrites data files."""
        if self.drop_feature is not None:
            return self.drop_feature in REWRITING_DROPS
        try:
            change = json.loads(self.change or "")
        except json.JSONDecodeError:
            return False  # the command refuses it, with no Spark
        if not isinstance(change, dict):
            return False
        drop = change.get("drop_feature")
        return "add_constraint" in change or (isinstance(drop, dict) and drop.get("name") in REWRITING_DROPS)


def _dropped(change: str | None) -> str | None:
    """The feature a ``drop_feature`` change names, if its JSON says so."""
    try:
        drop = json.loads(change or "").get("drop_feature")
    except (ValueError, AttributeError):
        return None
    return drop.get("name") if isinstance(drop, dict) else None
