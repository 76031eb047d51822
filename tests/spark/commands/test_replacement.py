"""Selective overwrites: replace_where and dynamic partition overwrite, in one commit.

Each replace_where result is checked against delta-rs's
``write_deltalake(mode="overwrite", predicate=...)`` on an identical copy of
the table, and read back by delta-rs and DuckDB.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import ConcurrentAppendError, InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.append import run_append

from ..conftest import disk_files, spark_rows, table_rows

deltalake = pytest.importorskip("deltalake")

DAYS = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "ds": [f"2024-01-0{1 + i // 4}" for i in range(12)],
        "v": [f"old{i}" for i in range(12)],
    }
)


def _source(tmp_path: Path, rows: pa.Table, name: str = "src") -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    pq.write_table(rows, str(folder / "part-0.parquet"))
    return str(folder)


def _twin(path: str, tmp_path: Path) -> str:
    twin = str(tmp_path / "twin")
    shutil.copytree(path, twin)
    return twin


def _our_rows(spark, path: str, columns: list[str] | None = None) -> list[tuple]:
    from airflow_delta_provider.spark.read.scan import scan

    return spark_rows(scan(spark, DeltaTable(path).snapshot()), columns)


def _last_commit(path: str) -> dict:
    return DeltaTable(path).history(limit=1)[0]


def _versions(path: str) -> int:
    return DeltaTable(path).latest_version()


def test_a_partition_is_replaced_in_one_commit_as_delta_rs_does(spark, tmp_path, make_table, duckdb_delta):
    path = make_table(DAYS, partition_by=["ds"])
    twin = _twin(path, tmp_path)
    new = pa.table({"id": pa.array([100, 101], pa.int64()), "ds": ["2024-01-02"] * 2, "v": ["new", "new"]})
    result = run_append(
        spark, path, _source(tmp_path, new), mode="overwrite", replace_where="ds = '2024-01-02'", token="t1"
    )
    deltalake.write_deltalake(twin, new, mode="overwrite", predicate="ds = '2024-01-02'")

    assert result.version == 1 and _versions(path) == 1  # one commit
    assert table_rows(path) == table_rows(twin)
    assert sorted(r[0] for r in table_rows(path, ["id"])) == [0, 1, 2, 3, 8, 9, 10, 11, 100, 101]
    info = _last_commit(path)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Overwrite", "partitionBy": "[]", "predicate": "ds = '2024-01-02'"}
    metrics = result.metrics
    assert (metrics["numDeletedRows"], metrics["numCopiedRows"], metrics["numRemovedFiles"]) == (4, 0, 1)
    assert (metrics["numFiles"], metrics["numOutputRows"]) == (1, 2)
    count = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}') WHERE ds = '2024-01-02'").fetchone()[0]
    assert count == 2


def test_a_data_column_predicate_rewrites_the_files_it_splits(spark, tmp_path, make_table, duckdb_delta):
    """Unpartitioned; each file holds rows on both sides of id >= 5."""
    path = make_table(pa.table({"id": pa.array([0, 2, 4, 6, 8], pa.int64()), "v": ["a"] * 5}))
    deltalake.write_deltalake(path, pa.table({"id": pa.array([1, 3, 5, 7, 9], pa.int64()), "v": ["b"] * 5}), mode="append")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([-1, -2], pa.int64()), "v": ["c"] * 2}), mode="append")
    twin = _twin(path, tmp_path)
    new = pa.table({"id": pa.array([5, 50], pa.int64()), "v": ["new", "new"]})
    result = run_append(spark, path, _source(tmp_path, new), mode="overwrite", replace_where="id >= 5")
    deltalake.write_deltalake(twin, new, mode="overwrite", predicate="id >= 5")

    assert table_rows(path) == table_rows(twin)
    assert (result.metrics["numDeletedRows"], result.metrics["numCopiedRows"]) == (5, 5)
    assert result.metrics["numRemovedFiles"] == 2  # the two split files; the third is not read
    assert result.metrics["numOutputRows"] == 2 + 5
    assert sorted(duckdb_delta.execute(f"SELECT id, v FROM delta_scan('{path}')").fetchall(), key=repr) == table_rows(twin)


def test_deletion_vectors_mark_the_replaced_rows(spark, tmp_path, make_table, duckdb_delta):
    path = make_table(
        pa.table({"id": pa.array(range(10), pa.int64()), "v": ["a"] * 10}),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    new = pa.table({"id": pa.array([7, 70], pa.int64()), "v": ["new", "new"]})
    result = run_append(spark, path, _source(tmp_path, new), mode="overwrite", replace_where="id >= 7")

    assert result.metrics["numDeletionVectorsAdded"] == 1 and result.metrics["numRemovedFiles"] == 0
    assert any(f.deletion_vector is not None for f in DeltaTable(path).snapshot().files)
    expected = sorted([(i, "a") for i in range(7)] + [(7, "new"), (70, "new")], key=repr)
    assert _our_rows(spark, path) == expected  # delta-rs reads no deletion vectors
    assert sorted(duckdb_delta.execute(f"SELECT id, v FROM delta_scan('{path}')").fetchall(), key=repr) == expected


def test_column_mapping_tables_are_replaced_by_logical_names(spark, tmp_path, make_table, duckdb_delta):
    from airflow_delta_provider.spark.commands.metadata.alter import run_alter

    path = make_table(DAYS, partition_by=["ds"])
    run_alter(None, path, json.dumps({"rename_column": {"column": "v", "to": "value"}}), enable_column_mapping=True)
    new = pa.table({"id": pa.array([100], pa.int64()), "ds": ["2024-01-03"], "value": ["new"]})
    run_append(spark, path, _source(tmp_path, new), mode="overwrite", replace_where="ds = '2024-01-03' OR value = 'old0'")

    rows = _our_rows(spark, path, ["id", "ds", "value"])  # delta-rs reads no renamed column here
    expected = [r for r in zip(range(12), DAYS["ds"].to_pylist(), DAYS["v"].to_pylist()) if r[1] != "2024-01-03"]
    expected = sorted([r for r in expected if r[2] != "old0"] + [(100, "2024-01-03", "new")], key=repr)
    assert rows == expected
    duck = duckdb_delta.execute(f"SELECT id, ds, value FROM delta_scan('{path}')").fetchall()
    assert sorted(duck, key=repr) == expected


def test_the_change_data_feed_records_deletes_and_inserts_as_delta_rs_does(spark, tmp_path, make_table, duckdb_delta):
    path = make_table(
        pa.table({"id": pa.array(range(10), pa.int64()), "v": ["a"] * 10}),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    twin = _twin(path, tmp_path)
    new = pa.table({"id": pa.array([8, 80], pa.int64()), "v": ["new", "new"]})
    result = run_append(spark, path, _source(tmp_path, new), mode="overwrite", replace_where="id >= 8")
    deltalake.write_deltalake(twin, new, mode="overwrite", predicate="id >= 8")

    def changes(table: str) -> list[tuple]:
        feed = deltalake.DeltaTable(table).load_cdf(starting_version=1).read_all()
        return sorted(zip(feed["id"].to_pylist(), feed["v"].to_pylist(), feed["_change_type"].to_pylist()))

    assert changes(path) == changes(twin) == [(8, "a", "delete"), (8, "new", "insert"), (9, "a", "delete"), (80, "new", "insert")]
    assert result.metrics["numAddedChangeFiles"] >= 1
    duck = duckdb_delta.execute(f"SELECT id, v FROM delta_scan('{path}')").fetchall()
    assert sorted(duck) == table_rows(twin) == [*((i, "a") for i in range(8)), (8, "new"), (80, "new")]


def test_dynamic_partition_overwrite_replaces_the_partitions_written(spark, tmp_path, make_table):
    path = make_table(DAYS, partition_by=["ds"])
    new = pa.table(
        {"id": pa.array([200, 201, 300], pa.int64()), "ds": ["2024-01-01", "2024-01-01", "2024-01-09"], "v": ["n"] * 3}
    )
    result = run_append(spark, path, _source(tmp_path, new), mode="overwrite", partition_overwrite_mode="dynamic")

    expected = [(i, d, v) for i, d, v in zip(range(12), DAYS["ds"].to_pylist(), DAYS["v"].to_pylist()) if d != "2024-01-01"]
    expected = sorted(expected + [(200, "2024-01-01", "n"), (201, "2024-01-01", "n"), (300, "2024-01-09", "n")], key=repr)
    assert table_rows(path, ["id", "ds", "v"]) == expected
    assert _last_commit(path)["operationParameters"] == {
        "mode": "Overwrite", "partitionBy": "[]", "isDynamicPartitionOverwrite": True,
    }  # fmt: skip
    assert result.metrics["numRemovedFiles"] == 1


def test_dynamic_overwrite_of_an_empty_source_commits_nothing_and_of_an_unpartitioned_table_everything(
    spark, tmp_path, make_table
):
    partitioned = make_table(DAYS, "partitioned", partition_by=["ds"])
    empty = _source(tmp_path, DAYS.slice(0, 0), "empty")
    assert run_append(spark, partitioned, empty, mode="overwrite", partition_overwrite_mode="dynamic").version is None
    assert _versions(partitioned) == 0

    flat = make_table(DAYS, "flat")
    new = _source(tmp_path, DAYS.slice(0, 1), "one")
    assert run_append(spark, flat, new, mode="overwrite", partition_overwrite_mode="dynamic").version == 1
    assert table_rows(flat) == [(0, "2024-01-01", "old0")]


@pytest.mark.parametrize(
    ("kwargs", "source_rows", "message"),
    [
        ({"mode": "overwrite", "replace_where": "ds = '2024-01-02'"}, DAYS.slice(0, 1),
         r"a source row does not match replace_where \"ds = .2024-01-02.\".*The row.s values: ds = 2024-01-01"),
        ({"mode": "overwrite", "replace_where": "id >= 5"}, DAYS.slice(0, 1),
         r"a source row does not match replace_where 'id >= 5'.*The row.s values: id = 0"),
        ({"mode": "overwrite", "replace_where": "nosuch = 1"}, DAYS.slice(0, 1), r"replace_where: .*nosuch"),
        ({"mode": "overwrite", "replace_where": "rand() < 0.5"}, DAYS.slice(0, 1), r"calls rand"),
        ({"mode": "overwrite", "replace_where": "id IN (SELECT 1)"}, DAYS.slice(0, 1), r"subquery"),
        ({"replace_where": "ds = '2024-01-01'"}, DAYS.slice(0, 1), r'needs mode="overwrite"'),
        ({"mode": "overwrite", "replace_where": "ds = '2024-01-01'", "partition_overwrite_mode": "dynamic"},
         DAYS.slice(0, 1), "cannot both be set"),
        ({"mode": "overwrite", "replace_where": "ds = '2024-01-01'", "overwrite_schema": True}, DAYS.slice(0, 1),
         "cannot be used with overwrite_schema"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_and_changes_nothing(spark, tmp_path, make_table, kwargs, source_rows, message):
    path = make_table(DAYS, partition_by=["ds"])
    before = disk_files(path)
    with pytest.raises(InvalidInputError, match=message):
        run_append(spark, path, _source(tmp_path, source_rows), **kwargs)
    assert disk_files(path) == before and _versions(path) == 0


@pytest.mark.parametrize(("concurrent_day", "conflicts"), [("2024-01-02", True), ("2024-01-03", False)])
def test_a_concurrent_append_conflicts_only_inside_the_replaced_range(
    spark, tmp_path, make_table, monkeypatch, concurrent_day, conflicts
):
    from airflow_delta_provider.spark.commands import append as append_module

    path = make_table(DAYS, partition_by=["ds"])
    real = append_module.write_files

    def write_then_race(*args, **kwargs):
        adds = real(*args, **kwargs)
        racing = pa.table({"id": pa.array([999], pa.int64()), "ds": [concurrent_day], "v": ["racer"]})
        deltalake.write_deltalake(path, racing, mode="append")
        return adds

    monkeypatch.setattr(append_module, "write_files", write_then_race)
    new = _source(tmp_path, pa.table({"id": pa.array([100], pa.int64()), "ds": ["2024-01-02"], "v": ["new"]}))
    if conflicts:
        with pytest.raises(ConcurrentAppendError):
            run_append(spark, path, new, mode="overwrite", replace_where="ds = '2024-01-02'")
        assert _versions(path) == 1  # the racer's commit only
        assert (999, "2024-01-02", "racer") in table_rows(path, ["id", "ds", "v"])
    else:
        assert run_append(spark, path, new, mode="overwrite", replace_where="ds = '2024-01-02'").version == 2
        ids = [r[0] for r in table_rows(path, ["id"])]
        assert 999 in ids and 100 in ids and 4 not in ids


def test_replace_where_on_every_backend(spark, tmp_path, make_table, backend):
    """The same reload on a local copy and on the store (arrow I/O there): the same rows and metrics."""
    from tests.storage_servers import upload_tree

    local = make_table(DAYS, "local", partition_by=["ds"])
    uri = backend.uri("days") if backend.name != "local" else _twin(local, tmp_path)
    if backend.name != "local":
        upload_tree(Path(local), uri, backend.storage_options)
    options = backend.storage_options or None
    source = _source(tmp_path, pa.table({"id": pa.array([5, 50], pa.int64()), "ds": ["2024-01-02"] * 2, "v": ["n"] * 2}))
    predicate = "ds = '2024-01-02' AND id >= 5"  # one partition, its file split by a data column
    theirs = run_append(spark, uri, source, mode="overwrite", replace_where=predicate, storage_options=options)
    ours = run_append(spark, local, source, mode="overwrite", replace_where=predicate, io="hadoop")

    assert theirs.version == ours.version == 1
    counted = ("numDeletedRows", "numCopiedRows", "numRemovedFiles", "numFiles", "numOutputRows")
    assert {k: theirs.metrics[k] for k in counted} == {k: ours.metrics[k] for k in counted}
    rows = deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist()
    assert sorted((tuple(r.values()) for r in rows), key=repr) == table_rows(local)


def test_check_constraints_and_generated_columns_hold(spark, tmp_path):
    from airflow_delta_provider.delta.errors import InvariantViolationError
    from airflow_delta_provider.spark.commands.metadata.alter import run_alter

    path = str(tmp_path / "t")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
        {"name": "month", "type": "string", "nullable": True,
         "metadata": {"delta.generationExpression": "substring(day, 1, 7)"}},
    ]}  # fmt: skip
    first = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["2024-01-01", "2024-02-01", "2024-02-02"]})
    run_append(spark, path, _source(tmp_path, first, "first"), table_schema=schema, partition_by=["month"])
    run_alter(spark, path, json.dumps({"add_constraint": {"name": "positive", "expression": "id > 0"}}))

    # The predicate names the generated column; the source leaves it out and it is computed.
    new = pa.table({"id": pa.array([20], pa.int64()), "day": ["2024-02-15"]})
    run_append(spark, path, _source(tmp_path, new, "new"), mode="overwrite", replace_where="month = '2024-02'")
    assert table_rows(path) == [(1, "2024-01-01", "2024-01"), (20, "2024-02-15", "2024-02")]

    before = disk_files(path)
    breaking = pa.table({"id": pa.array([-5], pa.int64()), "day": ["2024-02-20"]})
    with pytest.raises(InvariantViolationError, match="positive"):
        run_append(spark, path, _source(tmp_path, breaking, "bad"), mode="overwrite", replace_where="month = '2024-02'")
    assert disk_files(path) == before
