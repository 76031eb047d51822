"""Liquid clustering through the Spark commands: APPEND creates a clustered
table, OPTIMIZE clusters it (Hilbert order over the clustering columns) so a
point filter on any of them reads few files, later OPTIMIZE runs cluster only
the files written since, ``full`` reclusters the files clustered by other
columns, and delta-rs and DuckDB read every version."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering
from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json
from airflow_delta_provider.operations.optimize.spark import MIN_CUBE_SIZE_CONF
from airflow_delta_provider.spark.cli import build_parser
from tests.operations.dml.dml_support import commit_actions, rows_duckdb, rows_rs
from tests.operations.runs import run_append, run_optimize


@pytest.fixture(autouse=True)
def arrow_workers(spark, monkeypatch):
    import sys

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)


def _rows(rng: random.Random, start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "x": pa.array([rng.randrange(1_000_000) for _ in range(n)], pa.int64()),
            "y": pa.array([f"k{rng.randrange(100_000):05d}" for _ in range(n)], pa.string()),
        }
    )


def _source(tmp_path, name: str, data: pa.Table) -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(data, folder / "part-0.parquet")
    return str(folder)


def _share_of_files_read(table: str, column: str, value) -> float:
    """The share of files our stats-based skipping keeps for ``column = value``."""
    files = DeltaTable(table).snapshot().files
    kept = [f for f in files if f.parsed_stats()["minValues"][column] <= value <= f.parsed_stats()["maxValues"][column]]
    return len(kept) / len(files)


def _unclustered_files(path, files: int, rows: int, seed: int) -> str:
    from deltalake import write_deltalake

    rng = random.Random(seed)
    for i in range(files):
        write_deltalake(str(path), _rows(rng, i * rows, rows), mode="append")
    return str(path)


def test_append_creates_a_clustered_table_that_delta_rs_and_duckdb_read(spark, tmp_path, duckdb_delta):
    table = str(tmp_path / "t")
    source = _source(tmp_path, "src", _rows(random.Random(1), 0, 100))

    result = run_append(spark, table, source, format="parquet", cluster_by=["x", "Y"], token="create")

    snapshot = DeltaTable(table).snapshot()
    assert result.version == 0
    assert clustering.clustering_columns(snapshot) == [("x",), ("y",)]
    assert {"clustering", "domainMetadata"} <= set(snapshot.protocol.writer_features or ())
    info = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)
    assert json.loads(info["operationParameters"]["clusterBy"]) == ["x", "Y"]
    assert rows_rs(table) == rows_duckdb(duckdb_delta, table) and len(rows_rs(table)) == 100
    # appends keep working; one that names other clustering columns is refused
    more = _source(tmp_path, "more", _rows(random.Random(2), 100, 10))
    assert run_append(spark, table, more, format="parquet").version == 1
    with pytest.raises(InvalidInputError, match="ALTER TABLE"):
        run_append(spark, table, more, format="parquet", cluster_by=["id"])
    with pytest.raises(InvalidInputError, match="both partitioned"):
        run_append(spark, table, more, format="parquet", mode="overwrite", overwrite_schema=True, partition_by=["id"])
    assert DeltaTable(table).latest_version() == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"partition_by": ["id"], "cluster_by": ["x"]}, "partitioned .*or clustered .*not both"),
        ({"cluster_by": ["nope"]}, "no such column"),
    ],
)
def test_a_bad_clustered_table_is_refused_and_nothing_is_written(spark, tmp_path, kwargs, message):
    source = _source(tmp_path, "src", _rows(random.Random(1), 0, 10))
    with pytest.raises(InvalidInputError, match=message):
        run_append(spark, str(tmp_path / "t"), source, format="parquet", **kwargs)
    assert not (tmp_path / "t").exists()


def test_optimize_clusters_incrementally_and_point_filters_skip_most_files(spark, tmp_path, duckdb_delta):
    """60 files of random x and y: a point filter on either may read every
    file. After OPTIMIZE clusters by (x, y) into about as many files, at most
    30%. With the first ZCube complete (delta-spark's minCubeSize lowered
    below its size), new files are then clustered alone. After CLUSTER BY
    (y), only ``full`` reclusters the files clustered by (x, y)."""
    table = _unclustered_files(tmp_path / "t", files=60, rows=200, seed=3)
    alter_table(DeltaTable(table), change_from_json({"cluster_by": ["x", "y"]}))
    assert _share_of_files_read(table, "x", 500_000) > 0.9 and _share_of_files_read(table, "y", "k50000") > 0.9
    size = DeltaTable(table).snapshot().size_in_bytes
    expected = rows_rs(table)

    result = run_optimize(spark, table, target_size=size // 60)

    files = DeltaTable(table).snapshot().files
    assert result.metrics["numRemovedFiles"] == 60 and len(files) >= 30
    assert all(f.clustering_provider == "liquid" and f.tags["ZCUBE_ZORDER_BY"] == '["x", "y"]' for f in files)
    assert len({f.tags["ZCUBE_ID"] for f in files}) == 1  # one cube per OPTIMIZE
    assert _share_of_files_read(table, "x", 500_000) < 0.30
    assert _share_of_files_read(table, "y", "k50000") < 0.30
    assert rows_rs(table) == expected == rows_duckdb(duckdb_delta, table)
    info = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)
    assert info["operationParameters"]["clusterBy"] == '["x", "y"]' and info["operationParameters"]["isFull"] is False
    assert run_optimize(spark, table).version is None  # everything is clustered: nothing to do

    clustered = {f.path for f in files}
    rng = random.Random(9)
    for i in range(3):  # writes after clustering keep working
        run_append(spark, table, _source(tmp_path, f"new{i}", _rows(rng, 20_000 + i * 100, 100)), format="parquet")
    new = {f.path for f in DeltaTable(table).snapshot().files} - clustered

    spark.conf.set(MIN_CUBE_SIZE_CONF, str(size // 2))
    try:
        incremental = run_optimize(spark, table, target_size=size // 60)
    finally:
        spark.conf.unset(MIN_CUBE_SIZE_CONF)

    removed = {a["remove"]["path"] for a in commit_actions(table) if "remove" in a}
    assert removed == new and incremental.metrics["numRemovedFiles"] == 3  # only the new files
    assert clustered <= {f.path for f in DeltaTable(table).snapshot().files}

    # FULL is for new clustering columns, as delta-spark's applyMinZCube has
    # it: files clustered by (x, y) are left alone under CLUSTER BY (y) until
    # OPTIMIZE FULL reclusters them.
    before = {f.path for f in DeltaTable(table).snapshot().files}
    alter_table(DeltaTable(table), change_from_json({"cluster_by": ["y"]}))
    assert run_optimize(spark, table, target_size=size // 60).version is None

    everything = run_optimize(spark, table, target_size=size // 60, full=True)

    assert {a["remove"]["path"] for a in commit_actions(table) if "remove" in a} == before
    assert everything.metrics["numRemovedFiles"] == len(before)
    files = DeltaTable(table).snapshot().files
    assert all(f.tags["ZCUBE_ZORDER_BY"] == '["y"]' for f in files)
    info = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)
    assert info["operationParameters"]["isFull"] is True and info["operationParameters"]["clusterBy"] == '["y"]'
    assert _share_of_files_read(table, "y", "k50000") < 0.30
    assert len(rows_rs(table)) == 60 * 200 + 300 == len(rows_duckdb(duckdb_delta, table))


def test_optimize_refuses_z_order_and_full_where_they_do_not_apply(spark, tmp_path):
    table = _unclustered_files(tmp_path / "t", files=2, rows=10, seed=1)
    with pytest.raises(InvalidInputError, match="not clustered"):
        run_optimize(spark, table, full=True)
    alter_table(DeltaTable(table), change_from_json({"cluster_by": ["x"]}))
    with pytest.raises(InvalidInputError, match="liquid-clustered"):
        run_optimize(spark, table, zorder_by=["x"])
    assert DeltaTable(table).latest_version() == 2


def test_the_cli_takes_cluster_by_and_full() -> None:
    args = build_parser().parse_args(["append", "/t", "--source", "/s", "--format", "csv", "--cluster-by", "a, b"])
    assert args.cluster_by == ["a", "b"]
    assert build_parser().parse_args(["optimize", "/t", "--full"]).full is True


def test_delta_sparks_clustered_table_is_clustered_further_by_ours(spark, tmp_path, duckdb_delta):
    """delta-spark 4.4's golden table, clustered by a string column and
    OPTIMIZEd by delta-spark: its ZCube is partial (far below delta-spark's
    100 GiB), so an append of ours is clustered together with it, as
    delta-spark's OPTIMIZE would, with delta-spark's parameters."""
    import shutil
    from pathlib import Path

    golden = Path(__file__).resolve().parents[2] / "golden-4.4" / "liquid-clustering"
    table = str(tmp_path / "t")
    shutil.copytree(golden, table)
    theirs = {f.path for f in DeltaTable(table).snapshot().files}
    assert all(clustering.is_clustered_by(f, ["k"]) for f in DeltaTable(table).snapshot().files)
    data = pa.table({"id": pa.array([4, 5], pa.int32()), "k": ["e", "d"]})
    run_append(spark, table, _source(tmp_path, "src", data), format="parquet", cluster_by=["k"])

    result = run_optimize(spark, table)

    assert result.metrics["numRemovedFiles"] == 2  # our append's file and their partial ZCube's
    files = DeltaTable(table).snapshot().files
    assert not theirs & {f.path for f in files} and all(f.clustering_provider == "liquid" for f in files)
    assert len({f.tags["ZCUBE_ID"] for f in files}) == 1
    info = next(a["commitInfo"] for a in commit_actions(table) if "commitInfo" in a)
    assert info["operationParameters"] == {
        "predicate": "[]", "zOrderBy": "[]", "clusterBy": '["k"]', "auto": False, "isFull": False,
    }  # fmt: skip
    assert len(rows_rs(table)) == 5 == len(rows_duckdb(duckdb_delta, table))
