"""ALTER TABLE: one schema or property change as a metadata-only commit.

The core plans and commits the new ``metaData``
(:mod:`airflow_delta_provider.operations.alter.plan`). The change comes as
JSON, e.g. ``{"rename_column": {"column": "a", "to": "b"}}``. Adding a
CHECK constraint needs Spark: the expression is analysed against the table's
schema, and one job looks for a row that breaks it; the constraint is
committed only when there is none (delta-spark's ``ADD CONSTRAINT``).
Dropping ``deletionVectors`` or ``typeWidening`` rewrites data files: the
core drives the drop, and REORG's rewrite (:mod:`..reorg`) writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.alter.metrics import AlterMetrics
from airflow_delta_provider.operations.alter.plan import AddConstraint, DropFeature, alter_table, change_from_json
from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.result import CommandResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_delta_provider.delta.snapshot import Snapshot


def run(spark: SparkSession | None, spec: AlterSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Apply the spec's ``change`` (a JSON object, as its ``validate()`` checks)
    to its table; ``drop_feature`` (with ``truncate_history``) is the change
    ``{"drop_feature": {...}}`` in short. ``spark`` may be None, except to add
    a CHECK constraint. ``version`` is None when nothing changed (dropping a
    constraint that is not there, with ``if_exists``)."""
    if spec.drop_feature is not None:
        change = {"drop_feature": {"name": spec.drop_feature, "truncate_history": spec.truncate_history}}
    else:
        change = json.loads(spec.change or "")
    parsed = change_from_json(change)
    target = DeltaTable(spec.table_path, storage_options)
    snapshot = target.snapshot()
    if isinstance(parsed, AddConstraint):
        if spark is None:
            raise InvalidInputError(
                "adding a CHECK constraint checks the table's rows: it needs Spark, not engine=python"
            )
        _check_rows(spark, snapshot, parsed)
    rewrite = None
    if isinstance(parsed, DropFeature) and spark is not None:
        # Dropping deletionVectors or typeWidening rewrites data files: REORG's rewrite does it.
        from airflow_delta_provider.operations.reorg.spark import file_rewriter

        rewrite = file_rewriter(spark, target)
    result = alter_table(
        target,
        parsed,
        enable_column_mapping=spec.enable_column_mapping,
        token=spec.token,
        snapshot=snapshot,
        rewrite=rewrite,
    )
    return CommandResult(spec.table_path, parsed.operation, None if result is None else result.version, AlterMetrics())


def _check_rows(spark: SparkSession, snapshot: Snapshot, change: AddConstraint) -> None:
    """Refuse the constraint unless it is a boolean expression over the table
    and no row of ``snapshot`` breaks it (false or NULL); the error shows one."""
    from pyspark.sql import functions as F

    from airflow_delta_provider.delta.scan.merge_condition import nondeterministic_calls
    from airflow_delta_provider.delta.table_features.check_constraints import referenced_columns
    from airflow_delta_provider.spark.conditions import parse_condition
    from airflow_delta_provider.spark.read.scan import scan

    calls = nondeterministic_calls(change.expression)
    if calls:
        raise InvalidInputError(
            f"CHECK constraint {change.name} must be deterministic, but {change.expression!r} calls {', '.join(calls)}"
        )
    holds = parse_condition(spark, snapshot.schema, change.expression)
    broken = scan(spark, snapshot).filter(~F.coalesce(holds, F.lit(False))).limit(1).collect()
    if broken:
        read = referenced_columns(change.expression)
        row = broken[0].asDict()
        values = ", ".join(f"{k} = {v!r}" for k, v in row.items() if read is None or k.lower() in read)
        raise InvalidInputError(
            f"cannot add CHECK constraint {change.name} ({change.expression}): rows of the table break it, "
            f"e.g. {values}"
        )


__all__ = ["run"]
