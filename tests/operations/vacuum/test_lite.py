"""VACUUM LITE planning (operations/vacuum/lite.py): the commit range and
its refusal, delta-spark's ``_last_vacuum_info`` format, and LITE against a
full VACUUM's plan on histories written by our core and by delta-rs."""

from __future__ import annotations

import json
import os
import shutil
import time

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile, RemoveFile
from airflow_delta_provider.delta.errors import VacuumLiteUnavailableError
from airflow_delta_provider.delta.log.last_vacuum_info import (
    CANNOT_VACUUM_LITE,
    LAST_VACUUM_INFO,
    last_vacuum_info_json,
    lite_commit_range,
    read_last_vacuum_info,
    write_last_vacuum_info,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.vacuum.lite import plan_from_log_actions, plan_vacuum_lite
from airflow_delta_provider.operations.vacuum.plan import list_table, plan_vacuum

ROOT = "/t"


def test_the_range_starts_after_the_last_vacuum_and_ends_outside_the_retention():
    assert lite_commit_range(earliest_commit=0, snapshot_version=9, latest_outside_retention=6, last_vacuum=None) == (
        0,
        6,
    )
    assert lite_commit_range(earliest_commit=0, snapshot_version=9, latest_outside_retention=6, last_vacuum=3) == (4, 6)
    # nothing new outside the retention since the last vacuum, or no commit old enough
    assert lite_commit_range(earliest_commit=0, snapshot_version=9, latest_outside_retention=6, last_vacuum=6) is None
    assert (
        lite_commit_range(earliest_commit=5, snapshot_version=9, latest_outside_retention=None, last_vacuum=None)
        is None
    )
    # cleaned-up log, but the recorded vacuum reaches its start
    assert lite_commit_range(earliest_commit=5, snapshot_version=9, latest_outside_retention=8, last_vacuum=5) == (6, 8)


@pytest.mark.parametrize("last_vacuum", [None, 3])
def test_a_log_without_the_commits_lite_needs_is_refused_as_delta_spark_does(last_vacuum):
    with pytest.raises(VacuumLiteUnavailableError) as info:
        lite_commit_range(earliest_commit=5, snapshot_version=9, latest_outside_retention=8, last_vacuum=last_vacuum)
    assert CANNOT_VACUUM_LITE in str(info.value)
    assert "starts at version 5" in str(info.value)


def test_last_vacuum_info_is_delta_spark_s_json(tmp_path, new_table):
    new_table(tmp_path / "t", pa.schema([("id", pa.int64())]))
    table = DeltaTable(str(tmp_path / "t"))
    assert read_last_vacuum_info(table.log_store) is None
    write_last_vacuum_info(table.log_store, 7)
    raw = (tmp_path / "t" / "_delta_log" / LAST_VACUUM_INFO).read_text()
    assert json.loads(raw) == {"latestCommitVersionOutsideOfRetentionWindow": 7}
    assert read_last_vacuum_info(table.log_store) == 7
    assert last_vacuum_info_json(None) == b"{}"  # a FULL vacuum's (delta-spark leaves the absent value out)
    write_last_vacuum_info(table.log_store, None)
    assert read_last_vacuum_info(table.log_store) is None
    (tmp_path / "t" / "_delta_log" / LAST_VACUUM_INFO).write_text("{torn")
    assert read_last_vacuum_info(table.log_store) is None  # corrupt: as absent, like delta-spark
    assert table.snapshot().version == 0  # the file is invisible to replay


def test_plan_keeps_recent_tombstones_live_files_and_what_lies_outside_the_root():
    old, young = 1_000, 9_000
    removes = [
        RemoveFile("a.parquet", deletion_timestamp=old, size=10),
        RemoveFile("b.parquet", deletion_timestamp=young, size=20),  # within the retention
        RemoveFile("c.parquet", deletion_timestamp=old, size=30),  # re-added since: live
        RemoveFile("s3://elsewhere/x.parquet", deletion_timestamp=old, size=40),  # not this table's
        RemoveFile("a.parquet", deletion_timestamp=old - 1, size=10),  # a duplicate
    ]
    cdc = [AddCDCFile("_change_data/cdc-1.parquet", {}, 5)]
    adds = [AddFile("c.parquet", {}, 30, 0, True)]
    plan = plan_from_log_actions(
        table_root=ROOT, actions=[*removes, *cdc], adds=adds, tombstones=removes, now_ms=10_000, retention_ms=5_000
    )
    assert [(f.path, f.size) for f in plan.files] == [("_change_data/cdc-1.parquet", 5), ("a.parquet", 10)]
    assert plan.dirs == [] and plan.size_in_bytes == 15


# --- LITE against FULL on real histories ------------------------------------------------------


def _age_data(path: str, seconds: float) -> None:
    ts = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != "_delta_log"]
        for name in filenames:
            os.utime(os.path.join(dirpath, name), (ts, ts))


def _plans(path: str) -> tuple[set[str], set[str]]:
    """(FULL's planned files, LITE's) at retention 0."""
    table = DeltaTable(path)
    snap = table.snapshot()
    now = int(time.time() * 1000) + 1
    full = plan_vacuum(
        table_root=table.root,
        listing=list_table(table.storage, snap.partition_columns),
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=snap.partition_columns,
        now_ms=now,
        retention_ms=0,
    )
    lite = plan_vacuum_lite(table, snap, now_ms=now, retention_ms=0)
    assert lite.latest_outside_retention == snap.version
    return {f.path for f in full.files}, {f.path for f in lite.plan.files}


def _orphan(path: str, rel: str) -> None:
    os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
    with open(os.path.join(path, rel), "wb") as fh:
        fh.write(b"never in the log")


def test_lite_plans_the_full_plan_minus_orphans_on_a_delta_rs_history(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "rs")
    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": pa.array(["ab"[i % 2] for i in range(40)])})
    for i in range(4):
        deltalake.write_deltalake(path, data.slice(i * 10, 10), mode="append", partition_by=["p"])
    rs = deltalake.DeltaTable(path)
    rs.delete("id < 5")
    rs.optimize.compact()
    rs.update({"id": "id + 100"}, predicate="id > 30")
    deltalake.write_deltalake(path, data.slice(0, 3), mode="overwrite", partition_by=["p"])
    orphans = {"p=a/orphan.parquet", "orphan-root.parquet"}
    for rel in orphans:
        _orphan(path, rel)
    _age_data(path, 3600)
    full, lite = _plans(path)
    assert lite, "the history removed files"
    assert lite == full - orphans
    assert orphans <= full  # LITE leaves files the log never named, by design


def test_lite_plans_the_full_plan_minus_orphans_on_our_history(tmp_path, new_table, data_file):
    path = str(tmp_path / "ours")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])

    def batch(p: str, start: int) -> AddFile:
        return data_file(path, pa.table({"id": pa.array(range(start, start + 3), pa.int64())}), {"p": p})

    new_table(path, schema, ["p"], adds=[batch("a", 0), batch("b", 3)])
    table = DeltaTable(path)
    for step in range(6):  # rewrite one live file per commit, as an UPDATE does
        snap = table.snapshot()
        victim = sorted(snap.files, key=lambda f: f.path)[step % 2]
        txn = table.transaction("UPDATE", snapshot=snap)
        txn.read_files([victim])
        txn.add(victim.remove(int(time.time() * 1000)))
        txn.add(batch(victim.partition_values["p"] or "a", 100 * step))
        txn.commit(metrics={}, token=None)
    _orphan(path, "p=b/orphan.parquet")
    _age_data(path, 3600)
    full, lite = _plans(path)
    assert len(lite) == 6
    assert lite == full - {"p=b/orphan.parquet"}


def test_a_cleaned_up_log_refuses_lite_until_a_vacuum_reaches_it(tmp_path, new_table, data_file):
    path = str(tmp_path / "t")
    new_table(path, pa.schema([("id", pa.int64())]))
    table = DeltaTable(path)
    for _ in range(3):
        txn = table.transaction("WRITE", snapshot=table.snapshot())
        txn.add(data_file(path, pa.table({"id": pa.array([1], pa.int64())})))
        txn.commit(metrics={}, token=None)
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    write_checkpoint(table, table.snapshot(2))
    shutil.move(os.path.join(path, "_delta_log", f"{0:020d}.json"), str(tmp_path / "gone.json"))
    snap = table.snapshot()
    now = int(time.time() * 1000) + 1
    with pytest.raises(VacuumLiteUnavailableError, match="starts at version 1"):
        plan_vacuum_lite(table, snap, now_ms=now, retention_ms=0)
    write_last_vacuum_info(table.log_store, 1)  # a vacuum that read up to version 1
    assert plan_vacuum_lite(table, snap, now_ms=now, retention_ms=0).commit_range == (2, 3)
