"""Unit tests for ``delta/log_cleanup.py``: expired commits go only below a safe checkpoint."""

from __future__ import annotations

import json
import os
import time

import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs, expiry_cutoff
from airflow_delta_provider.delta.errors import VersionNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta_logs import local_log_path

DAY = 86_400_000
SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def now_ms() -> int:
    return int(time.time() * 1000)


def build(root, versions: int, configuration: dict[str, str]) -> DeltaTable:
    """A table of ``versions`` commits, each adding one file."""
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {}, None)
    txn.update_metadata(Metadata.new(SCHEMA, (), configuration, created_time=now_ms()))
    txn.add(AddFile("f0.parquet", {}, 1, 1))
    txn.commit()
    for v in range(1, versions):
        txn = table.transaction("WRITE", {}, table.snapshot())
        txn.add(AddFile(f"f{v}.parquet", {}, 1, 1))
        txn.commit()
    return table


def age(table: DeltaTable, upto: int, days: float) -> None:
    """Set the modification time of every log file of version <= ``upto`` to ``days`` ago."""
    t = time.time() - days * 86_400
    for f in table.log_store.list_from(0):
        if f.version <= upto:
            os.utime(local_log_path(table, f.name), (t, t))


def names(table: DeltaTable) -> list[tuple[int, str]]:
    return [(f.version, f.kind) for f in table.log_store.list_from(0)]


NO_AUTO = {"delta.checkpointInterval": "3", "delta.enableExpiredLogCleanup": "false"}


def test_expired_logs_below_the_newest_safe_checkpoint_are_deleted(tmp_path):
    table = build(tmp_path, 9, NO_AUTO)  # versions 0..8, checkpoints 3 and 6
    age(table, 5, days=40)
    deleted = cleanup_expired_logs(table, table.snapshot())
    # Commits 0..5 expired; the newest checkpoint at or below 5 is 3.
    assert deleted == 6  # 0..2: each commit and its .crc
    assert names(table)[0] == (3, "checkpoint")
    assert [v for v, k in names(table) if k == "commit"] == [3, 4, 5, 6, 7, 8]
    assert [v for v, k in names(table) if k == "checkpoint"] == [3, 6]
    for v in range(3, 9):
        assert table.snapshot(version=v).num_files == v + 1
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=2)


def test_older_checkpoints_go_too_when_a_newer_one_is_safe(tmp_path):
    table = build(tmp_path, 9, NO_AUTO)
    age(table, 7, days=40)
    cleanup_expired_logs(table, table.snapshot())
    assert names(table)[:3] == [(6, "checkpoint"), (6, "crc"), (6, "commit")]
    assert table.snapshot().num_files == 9 and table.snapshot(version=6).num_files == 7


def test_nothing_is_deleted_without_a_checkpoint(tmp_path):
    table = build(tmp_path, 5, {"delta.enableExpiredLogCleanup": "false"})
    age(table, 4, days=400)
    assert cleanup_expired_logs(table, table.snapshot()) == 0
    assert len(names(table)) == 10  # 5 commits and their .crc


def test_nothing_is_deleted_when_only_commits_after_the_checkpoint_expired(tmp_path):
    table = build(tmp_path, 5, NO_AUTO)  # checkpoint at 3
    age(table, 2, days=40)
    assert cleanup_expired_logs(table, table.snapshot()) == 0
    assert table.snapshot(version=0).num_files == 1


def test_unexpired_logs_are_kept(tmp_path):
    table = build(tmp_path, 8, NO_AUTO)
    age(table, 7, days=20)  # younger than the default 30 days
    assert cleanup_expired_logs(table, table.snapshot()) == 0


def test_log_retention_duration_is_a_table_property(tmp_path):
    table = build(tmp_path, 8, {**NO_AUTO, "delta.logRetentionDuration": "interval 2 days"})
    age(table, 7, days=3)
    # Versions 0..5 (each commit and its .crc) and checkpoint 3 are below checkpoint 6.
    assert cleanup_expired_logs(table, table.snapshot()) == 13
    assert table.snapshot(version=6).num_files == 7


def test_explicit_now_decides_what_is_expired(tmp_path):
    table = build(tmp_path, 8, NO_AUTO)
    assert cleanup_expired_logs(table, table.snapshot(), now_ms=now_ms()) == 0
    assert cleanup_expired_logs(table, table.snapshot(), now_ms=now_ms() + 31 * DAY) == 13


def test_post_commit_cleanup_runs_after_a_checkpoint(tmp_path):
    table = build(tmp_path, 4, {"delta.checkpointInterval": "2"})  # checkpoint at 2
    age(table, 3, days=40)
    txn = table.transaction("WRITE", {}, table.snapshot())
    txn.add(AddFile("f4.parquet", {}, 1, 1))
    # Checkpoint 4 is written; commits 0..3 are expired, and 2 is the newest
    # checkpoint at or below the last expired commit, so 0 and 1 go.
    assert txn.commit().version == 4
    assert names(table)[0] == (2, "checkpoint")
    assert [v for v, k in names(table) if k == "commit"] == [2, 3, 4]
    assert table.snapshot().num_files == 5
    hint = json.loads(table.log_store.read("_last_checkpoint"))
    assert hint["version"] == 4


def test_post_commit_cleanup_can_be_switched_off(tmp_path):
    table = build(tmp_path, 4, {"delta.checkpointInterval": "2", "delta.enableExpiredLogCleanup": "false"})
    age(table, 3, days=40)
    txn = table.transaction("WRITE", {}, table.snapshot())
    txn.add(AddFile("f4.parquet", {}, 1, 1))
    txn.commit()
    assert [v for v, k in names(table) if k == "commit"] == [0, 1, 2, 3, 4]


def test_a_file_below_the_checkpoint_that_has_not_expired_is_kept(tmp_path):
    """Each file's own time decides, as in delta-spark's MetadataCleanup."""
    table = build(tmp_path, 9, NO_AUTO)
    age(table, 5, days=40)
    recent = local_log_path(table, f"{1:020d}.json")
    os.utime(recent, None)  # touched now
    cleanup_expired_logs(table, table.snapshot())
    assert [v for v, k in names(table) if k == "commit"] == [1, 3, 4, 5, 6, 7, 8]


def protected_table(root, versions: int, before: int) -> DeltaTable:
    """A table at writer 7 with ``checkpointProtection``, protecting history before ``before``."""
    from airflow_delta_provider.delta.actions.model import Protocol

    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {}, None)
    txn.update_protocol(Protocol(1, 7, writer_features=("appendOnly", "checkpointProtection", "invariants")))
    configuration = {**NO_AUTO, "delta.requireCheckpointProtectionBeforeVersion": str(before)}
    txn.update_metadata(Metadata.new(SCHEMA, (), configuration, created_time=now_ms()))
    txn.add(AddFile("f0.parquet", {}, 1, 1))
    txn.commit()
    for v in range(1, versions):  # the feature does not stop writes
        txn = table.transaction("WRITE", {}, table.snapshot())
        txn.add(AddFile(f"f{v}.parquet", {}, 1, 1))
        txn.commit()
    return table


def test_checkpoint_protection_keeps_history_until_it_can_all_go(tmp_path):
    """Protected before 5: a cleanup that would stop at checkpoint 3 deletes
    nothing; once checkpoint 6 is safe, everything before it goes at once."""
    table = protected_table(tmp_path, 9, before=5)  # checkpoints 3 and 6
    age(table, 4, days=40)
    assert cleanup_expired_logs(table, table.snapshot()) == 0
    assert [v for v, k in names(table) if k == "commit"] == list(range(9))
    age(table, 7, days=40)
    assert cleanup_expired_logs(table, table.snapshot()) > 0
    assert [v for v, k in names(table) if k == "commit"] == [6, 7, 8]
    assert table.snapshot().num_files == 9


def test_no_checkpoint_is_written_inside_the_protected_history(tmp_path):
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.errors import InvalidInputError

    table = protected_table(tmp_path, 5, before=100)  # the automatic checkpoint at 3 is skipped
    assert [k for _, k in names(table)].count("checkpoint") == 0
    with pytest.raises(InvalidInputError, match="protects its history before version 100"):
        write_checkpoint(table, table.snapshot())
    unprotected = build(tmp_path / "plain", 5, NO_AUTO)
    assert [k for _, k in names(unprotected)].count("checkpoint") == 1


def test_the_cutoff_is_midnight_utc_of_the_retention_day(tmp_path):
    """PROTOCOL.md's cutOffTimestamp (delta-spark's truncateDay): a file older than the retention
    expires only at the midnight UTC after it."""
    midnight = 20_000 * DAY
    assert expiry_cutoff(midnight + 5 * 3_600_000, 30 * DAY) == midnight - 30 * DAY
    assert expiry_cutoff(midnight, 30 * DAY) == midnight - 30 * DAY
    table = build(tmp_path, 9, NO_AUTO)  # checkpoints 3 and 6
    now = midnight + 12 * 3_600_000
    for stamp, deleted in ((midnight - 30 * DAY + 3_600_000, 0), (midnight - 30 * DAY, 6)):  # 0..2 and .crc
        for f in table.log_store.list_from(0):  # 30 days and 11 hours old, then 30 days and 12 hours
            if f.version <= 5:
                os.utime(local_log_path(table, f.name), ns=(stamp * 1_000_000, stamp * 1_000_000))
        assert cleanup_expired_logs(table, table.snapshot(), now_ms=now) == deleted
