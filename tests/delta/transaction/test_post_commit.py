"""Post-commit work: the transaction says what is due, the table's commit path does it.

A bare :class:`Transaction` never checkpoints (delta-kernel-rs's shape); a
table's transaction runs the checkpoint and the log cleanup after its
commit, as :class:`PostCommitHookProperties` allow (delta-rs's option), and
nothing that happens there undoes the commit. The checkpoint cadence and
the cleanup itself: tests/delta/transaction/test_transaction.py and
tests/delta/checkpoint/test_log_cleanup.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.transaction import post_commit
from airflow_delta_provider.delta.transaction.post_commit import (
    PostCommitHookProperties,
    PostCommitOutcome,
    TableTransaction,
    run_post_commit,
)
from airflow_delta_provider.delta.transaction.transaction import CommitResult, PostCommitDue, Transaction
from tests.delta_logs import local_log_path

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
DAY = 86_400_000


def _table(root: Path, versions: int, configuration: dict[str, str]) -> DeltaTable:
    """A table at version ``versions - 1``, committed without post-commit work."""
    table = DeltaTable(root)
    off = PostCommitHookProperties(create_checkpoint=False)
    txn = table.transaction("CREATE TABLE", {}, None, post_commit_hooks=off)
    txn.update_metadata(Metadata(id="t", schema_string=SCHEMA, partition_columns=[], configuration=configuration))
    txn.commit()
    for i in range(1, versions):
        txn = table.transaction("WRITE", {}, table.snapshot(), post_commit_hooks=off)
        txn.add(AddFile(f"f{i}.parquet", {}, 1, 1))
        txn.commit()
    return table


def _append(table: DeltaTable, name: str, hooks: PostCommitHookProperties | None = None) -> TableTransaction:
    txn = table.transaction("WRITE", {}, table.snapshot(), post_commit_hooks=hooks)
    txn.add(AddFile(name, {}, 1, 1))
    txn.commit()
    return txn


def _checkpoints(table: DeltaTable) -> list[int]:
    return [f.version for f in table.log_store.list_from(0) if f.kind == "checkpoint"]


def _commits(table: DeltaTable) -> list[int]:
    return [f.version for f in table.log_store.list_from(0) if f.kind == "commit"]


def _age(table: DeltaTable, upto: int, days: float) -> None:
    old = (time.time() * 1000 - days * DAY) / 1000
    for version in range(upto + 1):
        os.utime(local_log_path(table, f"{version:020d}.json"), (old, old))


def test_a_transaction_says_what_is_due_and_does_none_of_it(tmp_path):
    table = _table(tmp_path, 2, {"delta.checkpointInterval": "2"})
    txn = Transaction(table, "WRITE", {}, table.snapshot())
    txn.add(AddFile("f2.parquet", {}, 1, 1))
    result = txn.commit()
    assert result.version == 2
    assert result.post_commit == PostCommitDue(checkpoint=True, log_cleanup=True)
    assert _checkpoints(table) == []  # the bare transaction leaves it to its caller


def test_nothing_is_due_between_checkpoints_and_cleanup_follows_the_table(tmp_path):
    table = _table(tmp_path, 1, {"delta.checkpointInterval": "2", "delta.enableExpiredLogCleanup": "false"})
    first = table.transaction("WRITE", {}, table.snapshot())
    first.add(AddFile("a.parquet", {}, 1, 1))
    assert first.commit().post_commit == PostCommitDue()
    second = table.transaction("WRITE", {}, table.snapshot())
    second.add(AddFile("b.parquet", {}, 1, 1))
    assert second.commit().post_commit == PostCommitDue(checkpoint=True, log_cleanup=False)


def test_a_tables_transaction_checkpoints_after_its_commit(tmp_path):
    table = _table(tmp_path, 2, {"delta.checkpointInterval": "2"})
    txn = _append(table, "f2.parquet")
    assert isinstance(txn, TableTransaction)
    assert txn.post_commit_outcome == PostCommitOutcome(checkpoint_version=2)
    assert _checkpoints(table) == [2]
    assert table.log_store.read_last_checkpoint()["version"] == 2


def test_the_checkpoint_can_be_switched_off(tmp_path):
    table = _table(tmp_path, 2, {"delta.checkpointInterval": "2"})
    txn = _append(table, "f2.parquet", PostCommitHookProperties(create_checkpoint=False))
    assert txn.post_commit_outcome == PostCommitOutcome()
    assert _checkpoints(table) == []


@pytest.mark.parametrize(
    ("table_says", "hooks", "kept"),
    [
        ("true", PostCommitHookProperties(), [2, 3, 4]),
        ("false", PostCommitHookProperties(), [0, 1, 2, 3, 4]),
        ("true", PostCommitHookProperties(cleanup_expired_logs=False), [0, 1, 2, 3, 4]),
        ("false", PostCommitHookProperties(cleanup_expired_logs=True), [2, 3, 4]),
    ],
)
def test_the_log_cleanup_follows_the_table_unless_the_option_says(tmp_path, table_says, hooks, kept):
    config = {"delta.checkpointInterval": "2", "delta.enableExpiredLogCleanup": table_says}
    table = _table(tmp_path, 4, config)
    outcome = run_post_commit(table, CommitResult(2, {}, post_commit=PostCommitDue(checkpoint=True)))
    assert outcome == PostCommitOutcome(checkpoint_version=2)
    _age(table, 3, days=40)  # commits 0..3 expired; checkpoint 2 is the newest safe one
    txn = _append(table, "f4.parquet", hooks)
    assert _commits(table) == kept
    assert txn.post_commit_outcome.log_files_deleted == (2 if kept[0] == 2 else 0)
    assert table.snapshot().num_files == 4


def test_a_failed_checkpoint_is_reported_and_the_commit_stands(tmp_path, monkeypatch):
    from airflow_delta_provider.delta.checkpoint import writer

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "write_checkpoint", broken)
    table = _table(tmp_path, 1, {"delta.checkpointInterval": "1"})
    txn = _append(table, "a.parquet")
    assert txn.post_commit_outcome == PostCommitOutcome(error="OSError('disk full')")
    assert table.latest_version() == 1 and table.snapshot().num_files == 1
    assert _checkpoints(table) == []


def test_the_table_commit_path_runs_the_post_commit_step(tmp_path, monkeypatch):
    """Whoever commits through a table goes through :func:`run_post_commit`."""
    table = _table(tmp_path, 1, {})
    seen: list[tuple[int, PostCommitHookProperties]] = []

    def spy(table, result, properties=None, read_snapshot=None):
        seen.append((result.version, properties))
        return PostCommitOutcome()

    monkeypatch.setattr(post_commit, "run_post_commit", spy)
    hooks = PostCommitHookProperties(cleanup_expired_logs=False)
    _append(table, "a.parquet", hooks)
    assert seen == [(1, hooks)]


def test_the_checkpoint_after_a_marker_commit_is_written_from_the_state_in_memory(tmp_path, monkeypatch):
    """A commit with only a ``commitInfo`` (VACUUM START) on a snapshot whose
    files are loaded: its checkpoint is made from that state, reading no log
    file, and holds what a checkpoint of the reloaded version holds."""
    import pyarrow.parquet as pq

    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.log.store import checkpoint_name
    from tests.delta_logs import count_log_calls

    table = _table(tmp_path / "t", 4, {"delta.checkpointInterval": "5"})
    snap = table.snapshot()
    txn = table.transaction("DELETE", {}, snap, post_commit_hooks=PostCommitHookProperties(create_checkpoint=False))
    txn.add(snap.files[0].remove(int(time.time() * 1000)))
    txn.commit()
    snap = table.snapshot()
    assert snap.files and snap.files_loaded
    calls = count_log_calls(monkeypatch)
    marker = table.transaction("VACUUM START", {}, snap, isolation_level="SnapshotIsolation")
    result = marker.commit(metrics={"numFilesToDelete": 0})
    assert result.version == 5 and marker.post_commit_outcome == PostCommitOutcome(checkpoint_version=5)
    assert calls.get("get", 0) <= 1 and calls.listings <= 1  # _last_checkpoint, the cleanup's listing
    assert calls.get("exists", 0) == calls.get("head", 0) == 0  # the commit just written is not looked for
    path = local_log_path(table, checkpoint_name(5))
    from_memory = pq.read_table(path)
    monkeypatch.undo()
    write_checkpoint(table, table.snapshot(5))
    assert pq.read_table(path).equals(from_memory)


def test_snapshot_of_loads_the_version_after_a_commit_that_changed_the_state(tmp_path):
    table = _table(tmp_path / "t", 3, {})
    snap = table.snapshot()
    assert snap.files
    txn = table.transaction("WRITE", {}, snap)
    txn.add(AddFile("new.parquet", {}, 1, 1))
    result = txn.commit()
    assert not post_commit.moved_on_by(snap, result)
    assert "new.parquet" in {f.path for f in post_commit.snapshot_of(table, result, snap).files}
    marker = table.transaction("VACUUM START", {}, table.snapshot()).commit()
    assert not post_commit.moved_on_by(snap, marker)  # not the next version of ``snap``


def test_a_marker_commit_moves_the_snapshot_on_without_reading_the_log(tmp_path, monkeypatch):
    """VACUUM END is made on START's version: the read snapshot moved on, with
    no listing and no checkpoint, commit or ``.crc`` read."""
    from tests.delta_logs import count_log_calls

    table = _table(tmp_path / "t", 3, {})
    snap = table.snapshot()
    txn = table.transaction("DELETE", {}, snap)
    txn.add(snap.files[0].remove(2))
    txn.commit()
    snap = table.snapshot()
    assert snap.files and snap.all_tombstones  # loaded
    result = table.transaction("VACUUM START", {}, snap, isolation_level="SnapshotIsolation").commit(
        metrics={"numFilesToDelete": 0}
    )
    calls = count_log_calls(monkeypatch)
    after = post_commit.snapshot_of(table, result, snap)
    assert dict(calls) == {}
    fresh = table.snapshot()
    assert after.version == fresh.version == snap.version + 1
    assert after.files == fresh.files and after.all_tombstones == fresh.all_tombstones
    assert (after.protocol, after.metadata, after.txns) == (fresh.protocol, fresh.metadata, fresh.txns)
    assert after.checksum().to_bytes() == fresh.checksum().to_bytes()
    assert snap.version == result.version - 1  # the read snapshot is left as it was
