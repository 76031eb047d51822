from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.errors import TableNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.checkpoint import run_checkpoint

from ..conftest import table_rows


def test_checkpoint_latest_version_without_spark(make_table):
    path = make_table(pa.table({"id": [1]}))
    write_deltalake(path, pa.table({"id": [2]}), mode="append")
    res = run_checkpoint(None, path, cleanup_logs=True, token="ignored")
    assert res.operation == "CHECKPOINT" and res.version == 1
    assert res.metrics["numAddFiles"] == 2 and res.metrics["numDeletedLogFiles"] == 0
    assert os.path.exists(os.path.join(path, "_delta_log", "00000000000000000001.checkpoint.parquet"))
    assert DeltaTable(path).latest_version() == 1  # no commit
    assert table_rows(path) == [(1,), (2,)]


def test_checkpoint_of_golden_copy_is_readable(golden_copy, duckdb_delta):
    path = golden_copy("basic-with-inserts-updates")
    before = table_rows(path)
    run_checkpoint(None, path)
    assert table_rows(path) == before
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0] == len(before)


def test_checkpoint_of_missing_table_fails(tmp_path):
    with pytest.raises(TableNotFoundError):
        run_checkpoint(None, str(tmp_path / "nothing"))
