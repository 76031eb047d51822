"""VACUUM (spark/commands/vacuum.py): dry run, START/END commits, deletes on
the driver and on executors, the retention check and the writer gate."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from airflow_delta_provider.delta.errors import RetentionTooShortError, UnsupportedFeatureError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands import vacuum as vacuum_cmd
from airflow_delta_provider.spark.commands.vacuum import run_vacuum

from .dml_support import PLAIN_GOLDEN, data_files, deltalake_table, rows_deltalake, rows_duckdb, state

pytest.importorskip("deltalake")

DAY = 24 * 3600


def age(path: str, seconds: float) -> None:
    """Make every data file ``seconds`` old."""
    ts = time.time() - seconds
    for rel in data_files(path):
        os.utime(os.path.join(path, rel), (ts, ts))


def table_with_garbage(tmp_path, n_orphans: int = 3) -> tuple[str, set[str]]:
    """A partitioned table with old files: live ones, tombstoned ones (a
    deltalake overwrite of partition 'b'), and orphans; returns the orphans."""
    from deltalake import DeltaTable as RsTable

    path = deltalake_table(tmp_path / "t", ["part"])
    RsTable(path).delete("part = 'b'")
    os.makedirs(os.path.join(path, "part=zz"), exist_ok=True)
    orphans = {f"part=a/orphan-{i}.parquet" for i in range(n_orphans - 1)} | {"part=zz/orphan.parquet"}
    for rel in orphans:
        with open(os.path.join(path, rel), "wb") as fh:
            fh.write(b"not parquet")
    with open(os.path.join(path, ".hidden-old"), "wb") as fh:
        fh.write(b"x")
    age(path, 8 * DAY)
    return path, orphans


def live_files(path: str) -> set[str]:
    from urllib.parse import unquote

    return {unquote(f.path) for f in DeltaTable(path).snapshot().files}


def test_dry_run_lists_orphans_and_changes_nothing(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    before = state(path)
    result = run_vacuum(spark, path, dry_run=True)
    assert result.version is None
    assert sorted(result.files) == sorted(os.path.join(path, rel) for rel in orphans)
    assert result.metrics["numFilesToDelete"] == len(orphans)
    assert result.metrics["sizeOfDataToDelete"] == sum(os.path.getsize(p) for p in result.files)
    assert state(path) == before


def test_vacuum_deletes_orphans_keeps_live_and_recent_tombstones(spark, tmp_path, duckdb_delta):
    path, orphans = table_with_garbage(tmp_path)
    rows = rows_deltalake(path)
    v0, _, files0 = state(path)
    result = run_vacuum(spark, path, token="vac-1")
    assert result.version == v0 + 2
    history = DeltaTable(path).history(limit=2)
    assert [h["operation"] for h in history] == ["VACUUM END", "VACUUM START"]
    assert history[0]["operationParameters"]["status"] == "COMPLETED"
    assert history[0]["operationMetrics"] == {"numDeletedFiles": str(len(orphans)), "numVacuumedDirectories": "1"}
    assert history[1]["operationParameters"]["retentionCheckEnabled"] is True
    assert history[0]["isolationLevel"] == "SnapshotIsolation"
    assert history[0]["tags"]["airflow.operationToken"] == "vac-1"
    # the tombstoned files are within the 7-day retention (deleted just now): kept
    assert data_files(path) == files0 - orphans
    assert not os.path.exists(os.path.join(path, "part=zz"))
    assert rows_deltalake(path) == rows
    assert rows_duckdb(duckdb_delta, path) == rows


def test_zero_retention_without_check_removes_tombstoned_files(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    result = run_vacuum(spark, path, retention_hours=0, enforce_retention=False)
    assert data_files(path) == live_files(path) | {".hidden-old"}
    assert result.metrics["numDeletedFiles"] > len(orphans)
    assert os.listdir(os.path.join(path, "_delta_log"))


def test_young_files_are_kept(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    age(path, 1 * DAY)  # everything is now one day old, within 7 days
    result = run_vacuum(spark, path)
    assert result.metrics["numDeletedFiles"] == 0
    assert orphans <= data_files(path)


def test_retention_too_short_is_refused_and_changes_nothing(spark, tmp_path):
    path, _ = table_with_garbage(tmp_path)
    before = state(path)
    with pytest.raises(RetentionTooShortError):
        run_vacuum(spark, path, retention_hours=1)
    with pytest.raises(RetentionTooShortError):
        run_vacuum(spark, path, retention_hours=-1, enforce_retention=False)
    assert state(path) == before


def test_large_deletes_run_on_executors(spark, tmp_path, monkeypatch):
    path, orphans = table_with_garbage(tmp_path, n_orphans=12)
    monkeypatch.setattr(vacuum_cmd, "PARALLEL_DELETE_THRESHOLD", 4)
    monkeypatch.setattr(vacuum_cmd, "_FILES_PER_TASK", 3)
    result = run_vacuum(spark, path)
    assert result.metrics["numDeletedFiles"] == len(orphans)
    assert not orphans & data_files(path)


def test_writer_gate_refuses_vacuum_protocol_check_table(spark, tmp_path, golden_dir):
    path = str(tmp_path / "t")
    shutil.copytree(golden_dir / "basic-with-vacuum-protocol-check-feature", path)
    before = state(path)
    with pytest.raises(UnsupportedFeatureError, match="vacuumProtocolCheck"):
        run_vacuum(spark, path, dry_run=True)
    assert state(path) == before


@pytest.mark.parametrize("name", PLAIN_GOLDEN)
def test_vacuum_of_golden_copies_keeps_every_live_row(spark, golden_copy, duckdb_delta, name):
    """Tables delta-spark wrote: old tombstoned files go, live ones stay, readers agree."""
    path = golden_copy(name)
    before = rows_duckdb(duckdb_delta, path)
    live = live_files(path)
    age(path, 8 * DAY)
    tombstoned = {
        rel for rel in data_files(path) if rel not in live and rel.endswith(".parquet")
    }
    result = run_vacuum(spark, path)
    assert result.operation == "VACUUM" and result.version is not None
    left = data_files(path)
    assert live <= left and not (tombstoned & left)
    assert rows_duckdb(duckdb_delta, path) == before
    if name != "basic-decimal-table":  # delta-rs misreads its negative partition value
        assert rows_deltalake(path) == before
