"""OPTIMIZE: compaction and Z-order. Rows are unchanged as delta-rs and DuckDB
read them, the commit is delta-spark's (``dataChange=false``), a concurrent
append still lands, Z-order makes a filter skip most files, and bad input
changes nothing."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.optimize import spark as optimize_module
from airflow_delta_provider.spark.cli import build_parser
from tests.operations.dml.dml_support import _sorted, commit_actions, rows_duckdb, rows_rs, state
from tests.operations.runs import run_append, run_delete, run_optimize


@pytest.fixture(autouse=True)
def arrow_workers(spark, monkeypatch):
    import sys

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)


def _small_files(path, files: int = 12, rows: int = 50, seed: int = 7, **kwargs) -> str:
    from deltalake import write_deltalake

    rng = random.Random(seed)
    for i in range(files):
        data = pa.table(
            {
                "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                "x": pa.array([rng.randrange(1_000_000) for _ in range(rows)], pa.int64()),
                "y": pa.array([rng.randrange(1_000_000) for _ in range(rows)], pa.int64()),
                "score": [rng.random() for _ in range(rows)],
                "label": [f"l{rng.randrange(100)}" for _ in range(rows)],
                "p": ["a" if i % 3 else "b"] * rows,
            }
        )
        write_deltalake(str(path), data, mode="append", **kwargs)
    return str(path)


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_compaction_packs_each_partitions_small_files_and_keeps_the_rows(spark, tmp_path, duckdb_delta, io):
    table = _small_files(tmp_path / "t", partition_by=["p"])
    expected = rows_rs(table)

    result = run_optimize(spark, table, token="compact", io=io)

    snapshot = DeltaTable(table).snapshot()
    assert (result.version, snapshot.num_files) == (12, 2)  # one file per partition
    assert rows_rs(table) == expected and rows_duckdb(duckdb_delta, table) == expected
    actions = commit_actions(table)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE"
    # delta-spark's OPTIMIZE parameters and commit metrics (the interop matrix compares them with its own)
    assert info["operationParameters"] == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": False}
    assert set(info["operationMetrics"]) == {
        "numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", "numDeletionVectorsRemoved",
        "minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize",
    }  # fmt: skip
    assert {"totalConsideredFiles", "executionTimeMs"} <= set(result.metrics)  # ours, in the result only
    assert {k: info["operationMetrics"][k] for k in ("numAddedFiles", "numRemovedFiles")} == {
        "numAddedFiles": "2",
        "numRemovedFiles": "12",
    }
    file_actions = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(file_actions) == 14 and not any(a["dataChange"] for a in file_actions)
    assert run_optimize(spark, table, io=io).version is None  # nothing left to do: no commit
    assert DeltaTable(table).latest_version() == 12


def test_where_compacts_only_the_partitions_it_names(spark, tmp_path):
    table = _small_files(tmp_path / "t", partition_by=["p"])
    result = run_optimize(spark, table, where="p = 'b'")
    files = DeltaTable(table).snapshot().files
    assert result.metrics["numRemovedFiles"] == 4  # files 0, 3, 6, 9
    assert sorted(f.partition_values["p"] for f in files) == ["a"] * 8 + ["b"]
    params = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)["operationParameters"]
    assert json.loads(params["predicate"]) == ["p = 'b'"]


def test_compaction_applies_deletion_vectors(spark, tmp_path, duckdb_delta):
    source = _small_files(tmp_path / "src", files=4)
    table = str(tmp_path / "t")
    run_append(spark, table, source, "delta", table_properties={"delta.enableDeletionVectors": "true"})
    run_append(spark, table, source, "delta")
    run_delete(spark, table, "id % 7 = 0")
    expected = rows_rs(table)

    result = run_optimize(spark, table)

    assert result.metrics["numDeletionVectorsRemoved"] >= 1
    assert all(f.deletion_vector is None for f in DeltaTable(table).snapshot().files)
    assert rows_rs(table) == expected and rows_duckdb(duckdb_delta, table) == expected


def test_a_concurrent_append_still_lands(spark, tmp_path, monkeypatch):
    """An append committed while OPTIMIZE rewrites: both commits land, no conflict."""
    from deltalake import write_deltalake

    table = _small_files(tmp_path / "t")
    before = rows_rs(table)
    appended = pa.table(
        {"id": pa.array([10_000], pa.int64()), "x": pa.array([5], pa.int64()), "y": pa.array([5], pa.int64()),
         "score": [0.5], "label": ["l0"], "p": ["c"]}
    )  # fmt: skip
    checking = optimize_module.check_rows_kept

    def append_meanwhile(*args):  # between the rewrite and the commit
        write_deltalake(table, appended, mode="append")
        return checking(*args)

    monkeypatch.setattr(optimize_module, "check_rows_kept", append_meanwhile)
    result = run_optimize(spark, table)
    assert result.version == 13  # after the append's 12
    assert rows_rs(table) == sorted([*before, *_sorted(appended)], key=repr)


def _files_that_may_hold(table: str, column: str, value: int) -> float:
    files = DeltaTable(table).snapshot().files
    hits = 0
    for f in files:
        stats = f.parsed_stats()
        if stats["minValues"][column] <= value <= stats["maxValues"][column]:
            hits += 1
    return hits / len(files)


def test_zorder_lets_a_filter_on_either_column_skip_most_files(spark, tmp_path):
    """Random x and y in 100 files: ``y = const`` may match every file before;
    after Z-ordering by (x, y) into about as many files, at most 30% of them."""
    table = _small_files(tmp_path / "t", files=100, rows=200, seed=3)
    before = _files_that_may_hold(table, "y", 500_000)
    size = sum(f.size for f in DeltaTable(table).snapshot().files)
    expected = rows_rs(table)

    result = run_optimize(spark, table, zorder_by=["x", "y"], target_size=size // 100)

    assert before > 0.9
    assert result.metrics["numAddedFiles"] >= 50
    assert _files_that_may_hold(table, "y", 500_000) <= 0.30
    assert _files_that_may_hold(table, "x", 500_000) <= 0.30
    assert rows_rs(table) == expected
    info = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"zorder_by": ["p"]}, "is a partition column"),
        ({"zorder_by": ["nope"]}, "no such column"),
        ({"zorder_by": ["y"]}, "no statistics"),
        ({"zorder_by": ["score"]}, "no min/max for float and double"),
        ({"zorder_by": ["x", "x"]}, "named twice"),
        ({"where": "x > 5"}, "partition columns only"),
        ({"where": "p = "}, "invalid condition"),
        ({"target_size": 0}, "must be positive"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(spark, tmp_path, kwargs, message):
    from deltalake import DeltaTable as RsTable

    table = _small_files(tmp_path / "t", files=3, partition_by=["p"])
    RsTable(table).alter.set_table_properties({"delta.dataSkippingStatsColumns": "id,x,score,label"})  # none for y
    before = state(table)
    with pytest.raises(InvalidInputError, match=message):
        run_optimize(spark, table, **kwargs)
    assert state(table) == before


def test_the_cli_takes_optimizes_options() -> None:
    args = build_parser().parse_args(
        ["optimize", "/t", "--where", "p = 1", "--target-size", "1024", "--zorder-by", "a, b"]
    )
    assert (args.where, args.target_size, args.zorder_by) == ("p = 1", 1024, ["a", "b"])
    with pytest.raises(InvalidInputError, match="zorder-by"):
        build_parser().parse_args(["optimize", "/t", "--zorder-by", " , "])


def test_zorder_splits_a_key_shared_by_many_rows_over_several_files(spark, tmp_path):
    """Three distinct values: without noise the range partitioning could cut
    at most three files; the rows of one key are spread to reach the target size."""
    from deltalake import write_deltalake

    table = str(tmp_path / "t")
    for i in range(30):
        ids = pa.array(range(i * 300, (i + 1) * 300), pa.int64())
        write_deltalake(table, pa.table({"id": ids, "x": pa.array([i % 3] * 300, pa.int64())}), mode="append")
    size = DeltaTable(table).snapshot().size_in_bytes

    result = run_optimize(spark, table, zorder_by=["x"], target_size=size // 12)

    assert result.metrics["numAddedFiles"] >= 8
    assert DeltaTable(table).snapshot().num_records == 9000


def test_the_target_size_comes_from_the_caller_then_the_table_then_128_mib() -> None:
    from airflow_delta_provider.delta.table_properties import target_file_size

    assert target_file_size({}) == 128 << 20
    assert target_file_size({"delta.targetFileSize": "32mb"}) == 32 << 20
    assert target_file_size({"delta.targetFileSize": "32mb"}, 1000) == 1000
    with pytest.raises(InvalidInputError, match=r"delta\.targetFileSize"):
        target_file_size({"delta.targetFileSize": "big"})


def test_a_clustered_table_is_compacted_but_not_z_ordered(spark, tmp_path):
    """Liquid clustering (a delta.clustering domain): Z-order is refused, as in delta-spark."""
    from tests.delta.table_features.test_domain_metadata import clustered_table
    from tests.operations.runs import run_optimize

    table = clustered_table(tmp_path / "t")
    with pytest.raises(InvalidInputError, match="liquid-clustered"):
        run_optimize(spark, str(tmp_path / "t"), zorder_by=["id"])
    assert table.latest_version() == 0


def test_file_size_percentiles_and_commit_metrics_are_delta_sparks():
    """delta-spark's p25/p50/p75 are the sorted sizes at n/4, n/2 and 3n/4; its commit records no
    timing or file-skipping counts (ours stay in the result)."""
    import time

    from airflow_delta_provider.delta.actions.model import AddFile

    adds = [AddFile(f"f{i}", {}, size, 0) for i, size in enumerate([50, 10, 40, 20, 30])]
    metrics = optimize_module._metrics(adds, [], 7, time.monotonic())
    assert (metrics["minFileSize"], metrics["p25FileSize"], metrics["p50FileSize"]) == (10, 20, 30)
    assert (metrics["p75FileSize"], metrics["maxFileSize"]) == (40, 50)
    assert metrics["totalConsideredFiles"] == 7
    assert not {"totalConsideredFiles", "totalFilesSkipped", "executionTimeMs"} & set(metrics.commit_metrics())
