"""The timeline: one row per version from its commitInfo, a bounded page at a time, cached by version."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable as RsTable

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.timeline.entries import entry_of, timeline
from tests.delta.timeline.conftest import TOKEN


def test_each_version_says_what_it_did_and_who_wrote_it(mixed_table):
    page = timeline(DeltaTable(mixed_table))
    assert page.latest == 2 and page.older is None
    assert [e.version for e in page.entries] == [2, 1, 0]
    update, append, write = page.entries
    assert (update.operation, update.rows_changed, update.bytes_written, update.duration_ms) == (
        "UPDATE",
        1,
        1234,
        1500,
    )
    assert update.token == TOKEN and update.engine.startswith("airflow-delta-provider/")
    # delta-rs's own commits: its metric names, its engine, no token.
    history = {h["version"]: h for h in RsTable(str(mixed_table)).history()}
    for e in (append, write):
        assert e.token is None and e.engine == history[e.version]["engineInfo"]
        assert e.operation == history[e.version]["operation"]
        assert e.rows_written == history[e.version]["operationMetrics"]["num_added_rows"]
    assert (write.rows_written, append.rows_written) == (3, 2)


def test_pages_are_bounded_and_chain(mixed_table):
    table = DeltaTable(mixed_table)
    first = timeline(table, limit=2)
    assert [e.version for e in first.entries] == [2, 1] and first.older == 1
    second = timeline(table, before=first.older, limit=2)
    assert [e.version for e in second.entries] == [0] and second.older is None


def test_a_cached_version_is_not_read_again(mixed_table, monkeypatch):
    table, cache = DeltaTable(mixed_table), {}
    timeline(table, cache=cache)
    assert sorted(v for _, v in cache) == [0, 1, 2]
    monkeypatch.setattr(table.log_store, "read_commit", lambda v: pytest.fail(f"read commit {v} again"))
    real_read = table.log_store.read
    monkeypatch.setattr(
        table.log_store, "read", lambda name: real_read(name) if not name.endswith(".json") else pytest.fail(name)
    )
    assert [e.version for e in timeline(table, cache=cache).entries] == [2, 1, 0]


def test_bad_bounds_are_refused(mixed_table):
    with pytest.raises(InvalidInputError, match="limit"):
        timeline(DeltaTable(mixed_table), limit=0)
    with pytest.raises(InvalidInputError, match="before"):
        timeline(DeltaTable(mixed_table), before=0)


def test_a_commit_without_commit_info_keeps_its_file_time():
    entry = entry_of(7, {}, file_time_ms=123)
    assert (entry.version, entry.timestamp, entry.operation, entry.token, entry.rows_written) == (
        7,
        123,
        None,
        None,
        None,
    )
    assert entry_of(1, {"operationMetrics": {"numOutputRows": "5"}}).to_dict()["rowsWritten"] == 5
