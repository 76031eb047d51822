"""Unit tests for ``delta/table.py``: opening snapshots (latest, version,
timestamp), history, and finding a commit by its operation token."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.delta.errors import InvalidInputError, TableNotFoundError, VersionNotFoundError
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
BASE = 1_700_000_000  # seconds; commit mtimes are set relative to it


def write(root: Path, version: int, *actions: dict, mtime_s: float | None = None) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    path = log / f"{version:020d}.json"
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))


def info(version: int, token: str | None = None) -> dict:
    body = {"timestamp": version, "operation": f"OP{version}", "operationParameters": {}}
    if token is not None:
        body["tags"] = {TOKEN_TAG: token}
    return {"commitInfo": body}


def add(path: str) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}


def make(root: Path, mtimes: list[float]) -> DeltaTable:
    """A table whose commit ``v`` adds file ``f{v}`` and has modification time ``mtimes[v]``."""
    for v, m in enumerate(mtimes):
        head = (
            [
                {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                {
                    "metaData": {
                        "id": "x",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": SCHEMA,
                        "partitionColumns": [],
                        "configuration": {},
                    }
                },
            ]
            if v == 0
            else []
        )
        write(root, v, info(v, token=f"tok{v}"), *head, add(f"f{v}"), mtime_s=m)
    return DeltaTable(root)


def iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat()


def test_exists_and_latest_version(tmp_path):
    table = DeltaTable(tmp_path)
    assert not table.exists()
    with pytest.raises(TableNotFoundError):
        table.latest_version()
    with pytest.raises(TableNotFoundError, match="not a Delta table"):
        table.snapshot()
    make(tmp_path, [BASE, BASE + 10, BASE + 20])
    assert table.exists() and table.latest_version() == 2
    assert table.root == str(tmp_path)


def test_golden_folder_without_delta_log_is_not_a_table(golden_dir):
    table = DeltaTable(golden_dir / "no-delta-log-folder")
    assert not table.exists()
    with pytest.raises(TableNotFoundError, match="not a Delta table"):
        table.snapshot()


def test_latest_version_sees_commits_after_the_checkpoint_hint(golden_dir):
    assert DeltaTable(golden_dir / "checkpoint").latest_version() == 14


def test_snapshot_by_timestamp_picks_the_newest_commit_at_or_before_it(tmp_path):
    table = make(tmp_path, [BASE, BASE + 10, BASE + 20])
    for t, version in [(BASE, 0), (BASE + 5, 0), (BASE + 10, 1), (BASE + 19.999, 1), (BASE + 20, 2)]:
        snap = table.snapshot(timestamp=iso(t))
        assert snap.version == version, t
        assert snap.timestamp == (BASE + 10 * version) * 1000
        assert len(snap.files) == version + 1


@pytest.mark.parametrize(
    "when",
    [
        dt.datetime.fromtimestamp(BASE + 12, dt.timezone.utc),
        dt.datetime.fromtimestamp(BASE + 12, dt.timezone.utc).replace(tzinfo=None),  # naive = UTC
        dt.datetime.fromtimestamp(BASE + 12, dt.timezone(dt.timedelta(hours=-8))),
        (BASE + 12) * 1000,
        iso(BASE + 12).replace("+00:00", "Z"),
    ],
)
def test_timestamp_forms(tmp_path, when):
    assert make(tmp_path, [BASE, BASE + 10, BASE + 20]).snapshot(timestamp=when).version == 1


def test_non_monotonic_mtimes_are_made_monotonic(tmp_path):
    # v1 and v2 were touched later/earlier than their order: commit times become
    # v0=BASE, v1=BASE+100, v2=BASE+100.001, v3=BASE+100.002, v4=BASE+200.
    table = make(tmp_path, [BASE, BASE + 100, BASE + 50, BASE + 100, BASE + 200])
    assert table.commit_timestamps() == [
        (0, BASE * 1000),
        (1, (BASE + 100) * 1000),
        (2, (BASE + 100) * 1000 + 1),
        (3, (BASE + 100) * 1000 + 2),
        (4, (BASE + 200) * 1000),
    ]
    assert table.snapshot(timestamp=iso(BASE + 60)).version == 0  # v2's raw mtime must not count
    assert table.snapshot(timestamp=iso(BASE + 100)).version == 1
    assert table.snapshot(timestamp=(BASE + 100) * 1000 + 2).version == 3
    snap = table.snapshot(timestamp=(BASE + 150) * 1000)
    assert snap.version == 3 and snap.timestamp == (BASE + 100) * 1000 + 2


def test_timestamp_before_the_earliest_commit_is_an_error(tmp_path):
    table = make(tmp_path, [BASE, BASE + 10])
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        table.snapshot(timestamp=iso(BASE - 1))


def test_timestamp_after_the_latest_commit_selects_the_latest_version(tmp_path):
    """As delta-rs does (delta-spark refuses); a DAG asking for "as of now" must not fail."""
    table = make(tmp_path, [BASE, BASE + 10])
    assert table.snapshot(timestamp=iso(BASE + 3600)).version == 1


def test_version_and_timestamp_together_or_a_bad_timestamp_are_invalid(tmp_path):
    table = make(tmp_path, [BASE])
    with pytest.raises(InvalidInputError):
        table.snapshot(version=0, timestamp=iso(BASE))
    with pytest.raises(InvalidInputError, match="ISO 8601"):
        table.snapshot(timestamp="yesterday")


def test_version_beyond_latest_is_not_found(tmp_path):
    with pytest.raises(VersionNotFoundError):
        make(tmp_path, [BASE]).snapshot(version=1)


def test_history_is_newest_first_with_version_and_limit(tmp_path):
    table = make(tmp_path, [BASE, BASE + 10, BASE + 20, BASE + 30])
    history = table.history()
    assert [h["version"] for h in history] == [3, 2, 1, 0]
    assert [h["operation"] for h in history] == ["OP3", "OP2", "OP1", "OP0"]
    assert [h["version"] for h in table.history(limit=2)] == [3, 2]


def test_history_of_a_commit_without_commit_info_uses_its_mtime(tmp_path):
    make(tmp_path, [BASE])
    write(tmp_path, 1, add("x"), mtime_s=BASE + 7)
    assert DeltaTable(tmp_path).history(limit=1) == [{"version": 1, "timestamp": (BASE + 7) * 1000}]


def test_find_commit_by_token(tmp_path):
    table = make(tmp_path, [BASE, BASE + 10, BASE + 20])
    version, found = table.find_commit("tok1")
    assert version == 1 and found.operation == "OP1" and found.token == "tok1"
    assert table.find_commit("nope") is None
    assert table.find_commit("tok1", since_version=2) is None
    assert table.find_commit("tok2", since_version=2)[0] == 2


def test_find_commit_skips_commits_older_than_not_before_without_reading_them(tmp_path, monkeypatch):
    table = make(tmp_path, [BASE, BASE + 10, BASE + 20])
    assert table.find_commit("tok1", not_before_ms=(BASE + 10) * 1000)[0] == 1
    assert table.find_commit("tok1", not_before_ms=(BASE + 11) * 1000) is None
    read = []
    original = table.log_store.read
    monkeypatch.setattr(table.log_store, "read", lambda name: read.append(name) or original(name))
    table.find_commit("nope", not_before_ms=(BASE + 15) * 1000)
    assert read == [f"{2:020d}.json"]


def txn(app_id: str, version: int, last_updated_s: float) -> dict:
    return {"txn": {"appId": app_id, "version": version, "lastUpdated": int(last_updated_s * 1000)}}


def test_find_txn_commit_names_the_commit_that_recorded_the_txn(tmp_path):
    """Days 1 to 3 of a daily load, each with its txn; a rerun of any day finds its
    commit, even after later days moved the app past it, and a day never loaded finds none."""
    make(tmp_path, [BASE])
    for version, day in ((1, 20260501), (2, 20260502), (3, 20260503)):
        write(
            tmp_path, version, info(version), add(f"d{day}"), txn("loader", day, BASE + version), mtime_s=BASE + version
        )
    write(tmp_path, 4, info(4), add("other"), txn("other-app", 7, BASE + 4), mtime_s=BASE + 4)
    table = DeltaTable(tmp_path)
    assert table.find_txn_commit("loader", 20260503)[0] == 3
    assert table.find_txn_commit("loader", 20260501)[0] == 1
    found, commit_info = table.find_txn_commit("loader", 20260502)
    assert (found, commit_info.operation) == (2, "OP2")
    assert table.find_txn_commit("loader", 20260504) is None  # not seen yet: the write runs
    assert table.find_txn_commit("loader", 20260430) is None  # skipped (the app is past it), never written
    assert table.find_txn_commit("nobody", 1) is None


def test_find_txn_commit_reads_only_commits_since_the_txn_was_recorded(tmp_path, monkeypatch):
    make(tmp_path, [BASE, BASE + 10_000])
    write(tmp_path, 2, info(2), add("a"), txn("loader", 5, BASE + 20_000), mtime_s=BASE + 20_000)
    write(tmp_path, 3, info(3), add("b"), mtime_s=BASE + 30_000)
    table = DeltaTable(tmp_path)
    read = []
    original = table.log_store.read
    monkeypatch.setattr(table.log_store, "read", lambda name: read.append(name) or original(name))
    snapshot = table.snapshot()
    read.clear()
    assert table.find_txn_commit("loader", 5, snapshot)[0] == 2
    assert read == [f"{3:020d}.json", f"{2:020d}.json"]


def test_file_uri_and_path_open_the_same_table(tmp_path):
    make(tmp_path / "a b", [BASE, BASE + 1])
    by_uri = DeltaTable("file://" + str(tmp_path / "a%20b"))
    assert by_uri.root == str(tmp_path / "a b")
    assert by_uri.snapshot().version == DeltaTable(tmp_path / "a b").snapshot().version == 1
