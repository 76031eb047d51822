from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.errors import TableNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from tests.operations.dml.dml_support import PLAIN_GOLDEN, rows_duckdb
from tests.operations.runs import run_checkpoint
from tests.spark.conftest import table_rows


def test_checkpoint_latest_version_without_spark(make_table):
    path = make_table(pa.table({"id": [1]}))
    write_deltalake(path, pa.table({"id": [2]}), mode="append")
    res = run_checkpoint(None, path, cleanup_logs=True, token="ignored")
    assert res.operation == "CHECKPOINT" and res.version == 1
    assert res.metrics["numAddFiles"] == 2 and res.metrics["numDeletedLogFiles"] == 0
    assert os.path.exists(os.path.join(path, "_delta_log", "00000000000000000001.checkpoint.parquet"))
    assert DeltaTable(path).latest_version() == 1  # no commit
    assert table_rows(path) == [(1,), (2,)]


@pytest.mark.parametrize("name", PLAIN_GOLDEN)
def test_checkpoint_of_golden_copy_is_readable(golden_copy, duckdb_delta, name):
    """DuckDB (delta-kernel-rs) reads the same rows before and after our checkpoint."""
    path = golden_copy(name)
    before = rows_duckdb(duckdb_delta, path)
    version = DeltaTable(path).latest_version()
    assert run_checkpoint(None, path).version == version
    assert os.path.exists(os.path.join(path, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    assert rows_duckdb(duckdb_delta, path) == before


def test_checkpoint_of_a_v2_table_without_spark(make_table, duckdb_delta):
    """On a table with ``delta.checkpointPolicy=v2`` CHECKPOINT writes a V2
    checkpoint (UUID-named file, sidecars) that DuckDB reads from alone."""
    from dataclasses import replace

    path = make_table(pa.table({"id": [1, 2]}))
    write_deltalake(path, pa.table({"id": [3]}), mode="append")
    table = DeltaTable(path)
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", parameters={}, snapshot=snap)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.checkpointPolicy": "v2"}))
    txn.commit(metrics={})
    before = rows_duckdb(duckdb_delta, path)
    res = run_checkpoint(None, path, cleanup_logs=True)
    assert res.version == 2 and res.metrics["numAddFiles"] == 2
    log = os.path.join(path, "_delta_log")
    (top,) = [n for n in os.listdir(log) if n.startswith("00000000000000000002.checkpoint.")]
    assert top.endswith(".parquet") and top != "00000000000000000002.checkpoint.parquet"
    assert len(os.listdir(os.path.join(log, "_sidecars"))) == 1
    for version in range(3):
        os.unlink(os.path.join(log, f"{version:020d}.json"))
    assert rows_duckdb(duckdb_delta, path) == before == [(1,), (2,), (3,)]


def test_checkpoint_of_missing_table_fails(tmp_path):
    with pytest.raises(TableNotFoundError):
        run_checkpoint(None, str(tmp_path / "nothing"))
