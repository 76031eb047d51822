"""Decisions from health reports: what is due, with which arguments, under which thresholds."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.health.decisions import (
    STEPS,
    MaintenanceThresholds,
    assess,
    decide,
    due_steps,
    partition_predicate,
)
from airflow_delta_provider.delta.health.report import PartitionHealth, health_report
from airflow_delta_provider.delta.table import DeltaTable


def test_defaults_follow_delta_spark():
    t = MaintenanceThresholds()
    assert (t.min_small_files, t.max_deleted_row_share, t.small_file_size, t.max_commits_since_checkpoint) == (
        50,
        0.05,
        None,
        None,
    )


def test_overrides_by_name_and_from_rendered_text():
    t = MaintenanceThresholds.of({"min_small_files": "4", "max_deleted_row_share": "0.2", "vacuum_lite": "false"})
    assert (t.min_small_files, t.max_deleted_row_share, t.vacuum_lite) == (4, 0.2, False)
    with pytest.raises(InvalidInputError, match=r"unknown maintenance thresholds \['min_files'\]"):
        MaintenanceThresholds.of({"min_files": 3})
    with pytest.raises(InvalidInputError, match="max_deleted_row_share must be a share"):
        MaintenanceThresholds.of({"max_deleted_row_share": 1.5})
    with pytest.raises(InvalidInputError, match="min_small_files must be a number"):
        MaintenanceThresholds.of({"min_small_files": "many"})


def test_the_hand_built_table_by_default_and_with_overrides(health_table):
    """Default thresholds: only the old tombstone is due (VACUUM, LITE). Lower ones: more steps."""
    root, _written = health_table
    table = DeltaTable(root)
    _report, decisions = assess(table)
    assert [d.step for d in decisions] == list(STEPS)
    assert due_steps(decisions) == ["reorg", "vacuum"]  # 7 of 82 rows hidden > 5%
    by_step = {d.step: d for d in decisions}
    assert by_step["vacuum"].arguments == {"mode": "lite"}
    assert by_step["reorg"].arguments == {"min_deleted_ratio": 0.05}

    strict = MaintenanceThresholds.of(
        {"min_small_files": 3, "max_deleted_row_share": 0.1, "max_commits_since_checkpoint": 2, "vacuum_lite": False}
    )
    _report, decisions = assess(table, strict)
    by_step = {d.step: d for d in decisions}
    assert due_steps(decisions) == ["optimize", "vacuum", "checkpoint"]
    # Partition a has 6 small files, b 1, the null partition 1: only a is compacted.
    where = by_step["optimize"].arguments["where"]
    assert where == "(`day` = 'a')"
    assert {f.partition_values["day"] for f in table.snapshot().files_matching(where)} == {"a"}
    assert by_step["vacuum"].arguments == {"mode": "full"}


def test_the_partition_condition_selects_exactly_those_partitions_nulls_and_quotes_included(health_table):
    root, _written = health_table
    snapshot = DeltaTable(root).snapshot()
    report = health_report(DeltaTable(root))
    chosen = [p for p in report.partitions if p.values["day"] != "b"]
    where = partition_predicate(chosen)
    assert where == "(`day` = 'a') OR (`day` IS NULL)"
    assert {f.partition_values["day"] for f in snapshot.files_matching(where)} == {"a", None}
    quoted = PartitionHealth({"day": "it's"}, 1, 1, 1, 1, 0, 0)
    assert partition_predicate([quoted]) == "(`day` = 'it\\'s')"


def test_clustering_coverage_below_the_threshold_is_an_optimize(health_table):
    root, _written = health_table
    report = health_report(DeltaTable(root))
    clustered = dataclasses.replace(
        report,
        clustering_columns=["id"],
        partitions=[dataclasses.replace(p, num_clustered_files=0) for p in report.partitions],
    )
    optimize = decide(clustered)[0]
    assert optimize.due and "clustering covers 0%" in optimize.reason
    assert not decide(clustered, MaintenanceThresholds(min_clustering_coverage=0.0))[0].due


def test_checkpoint_is_due_at_the_tables_interval(health_table):
    root, _written = health_table
    report = health_report(DeltaTable(root))
    assert report.commits_since_checkpoint == 2 and report.checkpoint_interval == 10
    overdue = dataclasses.replace(report, checkpoint_version=None, version=12)
    assert [d.due for d in decide(overdue)][STEPS.index("checkpoint")]


def test_vacuum_is_due_once_checkpointed_away_and_when_the_last_vacuum_is_old(health_table, data_file):
    """The expired remove keeps VACUUM due after a commit and a checkpoint; young removes
    alone make it due once the last VACUUM is older than ``max_days_since_vacuum``."""
    import pyarrow as pa

    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    root, written = health_table
    table = DeltaTable(root)
    txn = table.transaction("WRITE", snapshot=table.snapshot())
    txn.add(data_file(root, pa.table({"id": [900]}), {"day": "c"}))
    txn.commit()
    write_checkpoint(table, table.snapshot())
    report, decisions = assess(DeltaTable(root))
    vacuum = {d.step: d for d in decisions}["vacuum"]
    assert vacuum.due and str(written["vacuumable"]) in vacuum.reason

    young = dataclasses.replace(report, vacuumable_bytes=0)
    assert not {d.step: d for d in decide(young)}["vacuum"].due  # the VACUUM END is minutes old
    later = dataclasses.replace(young, generated_at=young.generated_at + 8 * 86400 * 1000)
    vacuum = {d.step: d for d in decide(later)}["vacuum"]
    assert vacuum.due and "2 removed files wait" in vacuum.reason and "> 7 days" in vacuum.reason
    assert not {d.step: d for d in decide(later, MaintenanceThresholds.of({"max_days_since_vacuum": None}))}[
        "vacuum"
    ].due
    assert not {d.step: d for d in decide(dataclasses.replace(later, num_pending_removes=0))}["vacuum"].due
    with pytest.raises(InvalidInputError, match="max_days_since_vacuum"):
        MaintenanceThresholds(max_days_since_vacuum=-1)
