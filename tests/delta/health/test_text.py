"""The report and the decisions as one readable table."""

from __future__ import annotations

from airflow_delta_provider.delta.health import text
from airflow_delta_provider.delta.health.decisions import assess
from airflow_delta_provider.delta.table import DeltaTable


def test_one_table_of_measures_partitions_and_steps(health_table):
    root, _written = health_table
    report, decisions = assess(DeltaTable(root))
    lines = text.report_lines(report.to_dict(), [d.to_dict() for d in decisions])
    rows = {line.split("  ")[0].strip(): line for line in lines}
    assert lines[0].split() == ["health", "value"]
    assert "7 of 82 (8.5%) hidden by deletion vectors" in rows["deleted rows"]
    assert "version 2, 2 commits since (interval 10)" in rows["last checkpoint"]
    assert "version 1 (" in rows["last OPTIMIZE"] and "h ago" in rows["last OPTIMIZE"]
    assert "LITE possible" in rows["VACUUM would free"]
    assert rows["reorg"].split()[1] == "DUE" and "[min_deleted_ratio=0.05]" in rows["reorg"]
    assert rows["optimize"].split()[1] == "skip"
    assert [line.strip().split()[0] for line in lines if line.startswith("  day=")] == ["day=a", "day=b", "day=null"]


def test_many_partitions_are_cut_to_the_first_ones(health_table):
    root, _written = health_table
    doc = assess(DeltaTable(root))[0].to_dict()
    doc["partitions"] = doc["partitions"] * 5
    lines = text.report_lines(doc)
    assert sum(line.startswith("  day=") for line in lines) == text.MAX_PARTITIONS
    assert lines[-1].split("  ")[-1].strip() == "... 5 more partitions"
