"""The newest commits' operation and time, from the commitInfo line only."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.health.history import recent_versions
from airflow_delta_provider.delta.table import DeltaTable


def test_newest_first_limited_and_as_history_says(health_table):
    root, _written = health_table
    table = DeltaTable(root)
    commits = [f for f in table.log_store.list_from(0) if f.kind == "commit"]
    got = recent_versions(table.log_store, commits, 3)
    assert [(v.version, v.operation, v.timestamp) for v in got] == [
        (h["version"], h["operation"], h["timestamp"]) for h in table.history(limit=3)
    ]


def test_a_commit_without_commit_info_keeps_its_file_time(health_table):
    root, _written = health_table
    table = DeltaTable(root)
    last = root / "_delta_log" / "00000000000000000004.json"
    lines = [line for line in last.read_text().splitlines() if "commitInfo" not in line]
    last.write_text("\n".join(lines) + "\n")
    commits = [f for f in table.log_store.list_from(0) if f.kind == "commit"]
    (newest,) = recent_versions(table.log_store, commits, 1)
    assert (newest.version, newest.operation, newest.timestamp) == (4, None, commits[-1].mtime_ms)
    assert all(json.loads(line) for line in lines)


def test_commit_info_found_when_not_first_nor_compact():
    from airflow_delta_provider.delta.health.history import commit_info_body

    add = b'{"add":{"path":"a","tags":{"note":"{\\"commitInfo\\":1}"}}}'
    assert commit_info_body(add + b'\n{"commitInfo":{"operation":"WRITE"}}\n') == {"operation": "WRITE"}
    assert commit_info_body(add + b'\n{ "commitInfo" : {"operation": "MERGE"} }') == {"operation": "MERGE"}
    assert commit_info_body(add) == {}
