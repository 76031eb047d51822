"""Optimized writes (spark/write/optimized_write.py): with
``delta.autoOptimize.optimizeWrite`` an APPEND is rebalanced by partition
before it is written, so the same input gives fewer, larger files, holding
the same rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.write.optimized_write import ADVISORY_SIZE_CONF, DEFAULT_BIN_SIZE, bin_size
from tests.operations.dml.dml_support import rows_duckdb, rows_rs
from tests.operations.runs import run_append, run_delete


@pytest.fixture
def one_task_per_file(spark):
    """Every source file read by a task of its own, so that a plain write writes a file per task and partition."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1024")
    spark.conf.set("spark.sql.files.openCostInBytes", "1024")
    yield
    spark.conf.unset("spark.sql.files.maxPartitionBytes")
    spark.conf.unset("spark.sql.files.openCostInBytes")


def _source(tmp_path: Path, files: int = 8) -> str:
    folder = tmp_path / "src"
    folder.mkdir()
    for n in range(files):
        ids = list(range(n * 100, n * 100 + 100))
        table = pa.table({"id": pa.array(ids, pa.int64()), "part": ["a" if i % 2 else "b" for i in ids]})
        pq.write_table(table, folder / f"{n}.parquet")
    return str(folder)


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_optimized_write_gives_fewer_larger_files_with_the_same_rows(
    spark, tmp_path, one_task_per_file, duckdb_delta, io, monkeypatch
):
    import sys

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)  # arrow mode's workers
    source = _source(tmp_path)
    plain, optimized = str(tmp_path / "plain"), str(tmp_path / "optimized")
    run_append(spark, plain, source, partition_by=["part"], io=io)
    run_append(spark, optimized, source, partition_by=["part"], io=io,
               table_properties={"delta.autoOptimize.optimizeWrite": "true"})  # fmt: skip
    plain_files = DeltaTable(plain).snapshot().files
    optimized_files = DeltaTable(optimized).snapshot().files
    assert len(plain_files) == 16  # 8 tasks, each with rows of both partitions
    assert len(optimized_files) == 2  # one file per partition
    assert min(f.size for f in optimized_files) > max(f.size for f in plain_files)
    assert rows_rs(optimized) == rows_rs(plain)
    assert rows_duckdb(duckdb_delta, optimized) == rows_duckdb(duckdb_delta, plain)
    assert spark.conf.get(ADVISORY_SIZE_CONF, None) is None  # the write's setting is undone

    # The files a DELETE rewrites are rebalanced too: one per partition touched.
    run_delete(spark, optimized, "id % 10 = 0")
    run_delete(spark, plain, "id % 10 = 0")
    assert len(DeltaTable(optimized).snapshot().files) == 2
    assert rows_rs(optimized) == rows_rs(plain)


def test_bin_size_is_the_target_file_size_else_delta_sparks_default():
    assert bin_size({}) == DEFAULT_BIN_SIZE == 512 * 1024 * 1024
    assert bin_size({"delta.targetFileSize": "64mb"}) == 64 * 1024 * 1024


def test_a_small_target_file_size_gives_several_files_per_partition(spark, tmp_path, one_task_per_file):
    """The bins are ``delta.targetFileSize``: at 16 KiB, each partition's 40 KB
    of rows are split into several files of about that size, still fewer than
    a plain write's one per task and partition."""
    import random

    folder = tmp_path / "src"
    folder.mkdir()
    rng = random.Random(7)
    for n in range(8):  # 8 files of 100 rows of 100 random characters: about 80 KB that do not compress
        ids = list(range(n * 100, n * 100 + 100))
        text = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=100)) for _ in ids]
        pq.write_table(
            pa.table({"id": ids, "text": text, "part": ["a" if i % 2 else "b" for i in ids]}), folder / f"{n}.parquet"
        )
    table = str(tmp_path / "t")
    properties = {"delta.autoOptimize.optimizeWrite": "true", "delta.targetFileSize": "16kb"}
    run_append(spark, table, str(folder), partition_by=["part"], table_properties=properties)
    files = DeltaTable(table).snapshot().files
    per_partition = {p: sum(f.partition_values["part"] == p for f in files) for p in ("a", "b")}
    assert all(1 < n < 8 for n in per_partition.values()), per_partition
    # Bins are shuffle bytes, so the (compressed) files come out at or under the target; adaptive
    # execution merges a split smaller than a fifth of it into its neighbour.
    assert all(16 * 1024 // 5 <= f.size <= 16 * 1024 for f in files), sorted(f.size for f in files)
    assert sum(f.num_records for f in files) == 800
