"""Auto compaction after writes (operations/optimize/auto_compact.py), as
delta-spark's ``AutoCompact`` hook: only on a table with
``delta.autoOptimize.autoCompact``, only over the partitions the write
touched that hold ``minNumFiles`` small files, in an OPTIMIZE commit of its
own (``auto: true``); a failure never fails the write."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.optimize.auto_compact import MIN_NUM_FILES_CONF
from tests.operations.dml.dml_support import data_files, rows_rs
from tests.operations.runs import run_alter, run_append, run_update

AUTO_COMPACT = {"delta.autoOptimize.autoCompact": "true"}


@pytest.fixture
def min_num_files(spark):
    """delta-spark's ``autoCompact.minNumFiles`` at 3 for the test (50 by default), as its own tests lower it."""
    spark.conf.set(MIN_NUM_FILES_CONF, "3")
    yield 3
    spark.conf.unset(MIN_NUM_FILES_CONF)


def _source(tmp_path: Path, n: int) -> str:
    folder = tmp_path / f"src{n}"
    folder.mkdir()
    ids = list(range(n * 10, n * 10 + 10))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "part": ["a" if i % 2 else "b" for i in ids]}),
                   folder / "0.parquet")  # fmt: skip
    return str(folder)


def _files_per_partition(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in DeltaTable(path).snapshot().files:
        out[f.partition_values["part"]] = out.get(f.partition_values["part"], 0) + 1
    return out


def test_auto_compaction_follows_writes_to_a_table_with_the_property_only(spark, tmp_path, min_num_files):
    path = str(tmp_path / "t")
    for n in range(3):  # no property: three small files per partition, never compacted
        result = run_append(spark, path, _source(tmp_path, n), partition_by=["part"])
        assert "autoCompactVersion" not in result.metrics
    assert _files_per_partition(path) == {"a": 3, "b": 3}
    assert DeltaTable(path).history()[0]["operation"] == "WRITE"
    run_alter(spark, path, {"set_properties": AUTO_COMPACT})
    before = sorted(rows_rs(path))

    # An UPDATE touching partition a: a holds 3 small files, so a is compacted; b is not.
    result = run_update(spark, path, "part = 'a' AND id = 1", {"id": "1001"})
    assert result.metrics["autoCompactVersion"] == result.version + 1
    assert _files_per_partition(path) == {"a": 1, "b": 3}
    info = DeltaTable(path).history()[0]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"]["auto"] in (True, "true")
    assert json.loads(info["operationParameters"]["predicate"]) == ["(`part` = 'a')"]
    assert info["operationMetrics"]["numRemovedFiles"] == "3"
    after = sorted(rows_rs(path))
    assert after == sorted((1001 if r[0] == 1 else r[0], r[1]) for r in before)

    # An APPEND touching both: b now holds 4 small files, a only 2.
    result = run_append(spark, path, _source(tmp_path, 7), partition_by=["part"])
    assert result.metrics["autoCompactVersion"] == result.version + 1
    assert _files_per_partition(path) == {"a": 2, "b": 1}


def test_a_failed_auto_compaction_leaves_the_write_committed(spark, tmp_path, min_num_files, monkeypatch, caplog):
    from airflow_delta_provider.operations.optimize import spark as optimize

    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, 0), partition_by=["part"], table_properties=AUTO_COMPACT)
    run_append(spark, path, _source(tmp_path, 1), partition_by=["part"])
    on_disk = data_files(path)

    def broken(*args, **kwargs):
        raise RuntimeError("forced failure")

    monkeypatch.setattr(optimize, "check_rows_kept", broken)
    with caplog.at_level(logging.WARNING):
        result = run_append(spark, path, _source(tmp_path, 2), partition_by=["part"])
    assert result.version == DeltaTable(path).latest_version() == 2  # the write, and no compaction
    assert "autoCompactVersion" not in result.metrics
    assert _files_per_partition(path) == {"a": 3, "b": 3}
    assert any(f"auto compaction of table {path}" in r.getMessage() and "forced failure" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)  # fmt: skip
    written = {f.path for f in DeltaTable(path).snapshot().files}
    assert data_files(path) - on_disk == written - on_disk  # the compaction's files are gone
    assert len(rows_rs(path)) == 30
