"""VACUUM LITE shares its state with delta-spark's: delta-spark 4's
``VACUUM t LITE`` after ours starts from the version ours recorded in
``_delta_log/_last_vacuum_info``, and ours after delta-spark's starts from
the version delta-spark recorded; each deletes the file a later DELETE
removed, and leaves orphans and live data alone."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from airflow_delta_provider.delta.log.last_vacuum_info import read_last_vacuum_info
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.vacuum.lite import plan_vacuum_lite
from tests.operations.dml.dml_support import data_files
from tests.operations.runs import run_vacuum
from tests.operations.vacuum.test_lite_run import ORPHANS, history

deltalake = pytest.importorskip("deltalake")


def _age(path: str) -> None:
    """Data files an hour old, as ``history`` makes them (retention 0 then takes them)."""
    ts = time.time() - 3600
    for rel in data_files(path):
        os.utime(os.path.join(path, rel), (ts, ts))


def _ours(path: str):
    return run_vacuum(None, path, retention_hours=0, enforce_retention=False, lite=True)


def _delete_one(path: str, id_: int) -> set[str]:
    """A delta-rs DELETE of one row; the data file it removed."""
    before = set(deltalake.DeltaTable(path).file_uris())
    deltalake.DeltaTable(path).delete(f"id = {id_}")
    time.sleep(1)  # its commit and tombstone strictly before the vacuum's cutoff
    gone = before - set(deltalake.DeltaTable(path).file_uris())
    return {os.path.relpath(g.removeprefix("file://"), path) for g in gone}


def test_lite_state_is_shared_both_ways_with_delta_spark(delta_spark, tmp_path):
    path = history(str(tmp_path / "t"))
    rows = lambda: sorted(r[0] for r in delta_spark.rows(path, columns="id"))  # noqa: E731

    first = _ours(path)
    ours_recorded = read_last_vacuum_info(DeltaTable(path).log_store)
    assert ours_recorded == first.version - 2
    removed = _delete_one(path, 1)
    _age(path)
    expected_rows = rows()

    # delta-spark's LITE reads from the version after ours recorded.
    delta_spark.sql(f"VACUUM {delta_spark.table(path)} LITE RETAIN 0 HOURS")
    theirs = delta_spark.history(path, limit=1)[-1]
    assert theirs["operation"] == "VACUUM END"
    assert int(theirs["operationMetrics"]["numDeletedFiles"]) == len(removed) == 1
    assert not removed & data_files(path) and data_files(path) >= ORPHANS  # LITE leaves orphans
    theirs_recorded = read_last_vacuum_info(DeltaTable(path).log_store)
    info = json.loads(Path(path, "_delta_log", "_last_vacuum_info").read_text())
    assert info == {"latestCommitVersionOutsideOfRetentionWindow": theirs_recorded}
    assert theirs_recorded > ours_recorded
    assert rows() == expected_rows

    # Ours reads from the version after delta-spark recorded.
    removed = _delete_one(path, 2)
    _age(path)
    table = DeltaTable(path)
    plan = plan_vacuum_lite(table, table.snapshot(), now_ms=int(time.time() * 1000), retention_ms=0)
    assert plan.commit_range is not None and plan.commit_range[0] == theirs_recorded + 1
    second = _ours(path)
    assert int(second.metrics["numDeletedFiles"]) == len(removed) == 1
    assert not removed & data_files(path) and data_files(path) >= ORPHANS
    assert rows() == sorted(i for i in expected_rows if i != 2)
