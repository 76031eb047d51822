from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.errors import TableNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.checkpoint import run_checkpoint

from ..conftest import table_rows
from .dml_support import PLAIN_GOLDEN, rows_duckdb


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


def test_checkpoint_of_missing_table_fails(tmp_path):
    with pytest.raises(TableNotFoundError):
        run_checkpoint(None, str(tmp_path / "nothing"))
