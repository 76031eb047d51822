"""Tests for :mod:`airflow_delta_provider.delta.table_features.clustering` (a
clustered table's columns through ALTER and replay: test_domain_metadata.py)."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import AddFile, DomainMetadata
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering
from airflow_delta_provider.delta.table_features.clustering import DOMAIN, is_clustered
from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json


def test_a_live_clustering_domain_makes_a_table_clustered():
    live = DomainMetadata(DOMAIN, json.dumps({"clusteringColumns": [["day"]]}))
    assert is_clustered({DOMAIN: live})
    assert not is_clustered({DOMAIN: DomainMetadata(DOMAIN, "{}", removed=True)})
    assert not is_clustered({"acme.lineage": DomainMetadata("acme.lineage", "{}")})


# --- Creating and changing a clustered table (ALTER ... CLUSTER BY) ------------------


def _table(path, **kwargs) -> str:
    from deltalake import write_deltalake

    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "b", "c"], "score": [0.5, 1.5, 2.5]})
    write_deltalake(str(path), data, **kwargs)
    return str(path)


def _log_state(path: str) -> tuple[int | None, list[str]]:
    import os

    return DeltaTable(path).latest_version(), sorted(os.listdir(os.path.join(path, "_delta_log")))


def test_alter_cluster_by_makes_a_table_clustered_as_delta_spark_does(tmp_path, duckdb_delta):
    path = _table(tmp_path / "t")
    table = DeltaTable(path)

    result = alter_table(table, change_from_json({"cluster_by": ["ID", "day"]}))

    snapshot = table.snapshot()
    assert result is not None and result.version == 1
    assert clustering.clustering_columns(snapshot) == [("id",), ("day",)]
    domain = json.loads(snapshot.domain_metadata[DOMAIN].configuration)
    assert domain == {"clusteringColumns": [["id"], ["day"]], "domainName": "delta.clustering"}  # delta-spark 4.4's
    assert {"clustering", "domainMetadata"} <= set(snapshot.protocol.writer_features or ())
    assert snapshot.protocol.min_writer_version == 7
    assert result.commit_info["operation"] == "CLUSTER BY"
    assert result.commit_info["operationParameters"] == {"oldClusteringColumns": "", "newClusteringColumns": "id,day"}
    from deltalake import DeltaTable as RsTable

    assert RsTable(path).to_pyarrow_table().num_rows == 3  # readers take the new protocol
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0] == 3

    alter_table(table, change_from_json({"cluster_by": ["day"]}))
    assert clustering.clustering_columns(table.snapshot()) == [("day",)]
    none = alter_table(table, change_from_json({"cluster_by": "NONE"}))
    assert none is not None and none.commit_info["operationParameters"]["oldClusteringColumns"] == "day"
    snapshot = table.snapshot()
    assert clustering.clustering_columns(snapshot) == [] and clustering.is_clustered(snapshot.domain_metadata)


def test_cluster_by_none_on_a_table_that_is_not_clustered_commits_nothing(tmp_path):
    path = _table(tmp_path / "t")
    assert alter_table(DeltaTable(path), change_from_json({"cluster_by": []})) is None
    assert DeltaTable(path).latest_version() == 0


@pytest.mark.parametrize(
    ("partitioned", "columns", "message"),
    [
        (True, ["id"], "both partitioned"),
        (False, ["nope"], "no such column"),
        (False, ["score"], "no min/max for float and double"),
        (False, ["id", "id"], "named twice"),
        (False, ["a", "b", "c", "d", "e"], "4 columns at most"),
    ],
)
def test_bad_clustering_columns_are_refused_and_change_nothing(tmp_path, partitioned, columns, message):
    path = _table(tmp_path / "t", partition_by=["day"] if partitioned else None)
    before = _log_state(path)
    with pytest.raises(InvalidInputError, match=message):
        alter_table(DeltaTable(path), change_from_json({"cluster_by": columns}))
    assert _log_state(path) == before


def test_cluster_by_the_same_columns_again_changes_nothing(tmp_path):
    path = _table(tmp_path / "t")
    alter_table(DeltaTable(path), change_from_json({"cluster_by": ["id"]}))
    with pytest.raises(InvalidInputError, match="changes nothing"):
        alter_table(DeltaTable(path), change_from_json({"cluster_by": ["ID"]}))


def test_files_keep_their_clustering_provider_and_cube_through_a_checkpoint(tmp_path):
    path = _table(tmp_path / "t")
    table = DeltaTable(path)
    alter_table(table, change_from_json({"cluster_by": ["id"]}))
    clustered = clustering.clustered_file(AddFile("c.parquet", {}, 10, 1, data_change=False), ["id"], "cube-1")
    txn = table.transaction("OPTIMIZE", {}, table.snapshot())
    txn.add(clustered)
    txn.commit()
    write_checkpoint(table, table.snapshot())

    files = {f.path: f for f in DeltaTable(path).snapshot().files}  # read back from the checkpoint
    assert files["c.parquet"].clustering_provider == "liquid"
    assert files["c.parquet"].tags == {"ZCUBE_ID": "cube-1", "ZCUBE_ZORDER_BY": '["id"]'}
    assert clustering.is_clustered_by(files["c.parquet"], ["ID"])
    assert not clustering.is_clustered_by(files["c.parquet"], ["day"])  # clustered by other columns: again
    assert not any(clustering.is_clustered_by(f, ["id"]) for p, f in files.items() if p != "c.parquet")


def test_concurrent_clustering_changes_conflict(tmp_path):
    from airflow_delta_provider.delta.errors import ConcurrentTransactionError

    path = _table(tmp_path / "t")
    table = DeltaTable(path)
    alter_table(table, change_from_json({"cluster_by": ["id"]}))
    read = table.snapshot()
    alter_table(table, change_from_json({"cluster_by": ["day"]}), snapshot=read)
    with pytest.raises(ConcurrentTransactionError, match=r"delta\.clustering"):
        alter_table(table, change_from_json({"cluster_by": ["id", "day"]}), snapshot=read)
    assert clustering.clustering_columns(table.snapshot()) == [("day",)]


# --- which files OPTIMIZE clusters (delta-spark OSS's applyMinZCube) ------------------------------


def _file(name: str, size: int, cube: str | None = None, by: tuple[str, ...] = ("id",), provider: str = "liquid"):
    add = AddFile(f"{name}.parquet", {}, size, 1, data_change=False)
    if cube is None:
        return add
    return dataclasses.replace(clustering.clustered_file(add, list(by), cube), clustering_provider=provider)


def _names(files) -> list[str]:
    return sorted(f.path.removesuffix(".parquet") for f in files)


def test_new_files_are_clustered_with_the_partial_zcubes_and_complete_ones_stay():
    new = _file("new", 10)
    partial = [_file("p1", 10, "small"), _file("p2", 10, "small")]
    complete = [_file("c1", 60, "big"), _file("c2", 60, "big")]
    files = [*complete, *partial, new]
    assert _names(clustering.files_to_cluster(files, ["id"], min_cube_size=100)) == ["new", "p1", "p2"]
    # With delta-spark's default threshold (100 GiB) every cube here is partial: all are merged.
    assert len(clustering.files_to_cluster(files, ["ID"])) == 5


def test_one_zcube_alone_is_left_as_it_is_and_two_are_merged():
    one = [_file("a", 10, "x"), _file("b", 10, "x")]
    assert clustering.files_to_cluster(one, ["id"]) == []
    assert _names(clustering.files_to_cluster([*one, _file("c", 10, "y")], ["id"])) == ["a", "b", "c"]


def test_files_clustered_by_other_columns_wait_for_full():
    other = _file("other", 10, "z", by=("day",))
    foreign = _file("foreign", 10, "w", provider="someone-else")
    new = _file("new", 10)
    assert _names(clustering.files_to_cluster([other, foreign, new], ["id"])) == ["new"]
    assert _names(clustering.files_to_cluster([other, foreign, new], ["id"], full=True)) == ["foreign", "new", "other"]


def test_delta_rs_liquid_clustering_test_table_reads_and_refuses_writes_by_name(tmp_path, snapshot_rows, duckdb_delta):
    """delta-rs's ``table_with_liquid_clustering`` (tests/delta-rs/README.md):
    Databricks' preview ``liquid`` writer feature, clustering columns in a
    property and no ``delta.clustering`` domain. Its rows read as delta-rs and
    DuckDB read them, its ``.crc`` validates, it is not clustered in the
    protocol's sense, and a write is refused naming ``liquid`` (delta-spark
    does not write it either), with nothing written."""
    import shutil
    from pathlib import Path

    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    from airflow_delta_provider.delta.errors import UnsupportedFeatureError
    from airflow_delta_provider.delta.health.report import health_report

    source = Path(__file__).resolve().parents[2] / "delta-rs" / "table_with_liquid_clustering"
    root = tmp_path / "t"
    shutil.copytree(source, root)
    table = DeltaTable(str(root))
    snap = table.snapshot()
    assert snap.segment.checksum is not None and len(snap.files) == 10  # the files check against the .crc
    ours = sorted(snapshot_rows(snap).column("id").to_pylist())
    theirs = QueryBuilder().register("t", RsTable(str(root))).execute("SELECT id FROM t").read_all()
    assert ours == sorted(pa.table(theirs).column("id").to_pylist()) and len(ours) == 10
    assert ours == sorted(r[0] for r in duckdb_delta.execute(f"SELECT id FROM delta_scan('{root}')").fetchall())
    assert not is_clustered(snap.domain_metadata) and clustering.clustering_columns(snap) == []
    assert health_report(table).num_files == 10

    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    with pytest.raises(UnsupportedFeatureError, match=r"writer feature\(s\): liquid"):
        table.transaction("WRITE", snapshot=snap)  # refused before anything is staged
    with pytest.raises(UnsupportedFeatureError, match="liquid"):
        alter_table(table, change_from_json({"cluster_by": ["id"]}))
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before
