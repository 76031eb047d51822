"""DELETE (operations/delete/spark.py): same rows as deltalake's own delete on an
identical copy, readable by deltalake and DuckDB; whole files go without a
rewrite when partition values decide; bad input changes nothing."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    InvalidInputError,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.delete.spark import DeleteCommand
from tests.operations.dml.dml_support import (
    DELTALAKE_UNREADABLE,
    PLAIN_GOLDEN,
    deltalake_table,
    last_commit,
    rows_deltalake,
    rows_duckdb,
    shadowing_cases,
    shadowing_condition,
    shadowing_twins,
    state,
    twin,
)
from tests.operations.runs import run_delete, run_update

pytest.importorskip("deltalake")


def deltalake_delete(path: str, predicate: str | None) -> None:
    from deltalake import DeltaTable as RsTable

    RsTable(path).delete(predicate)


@pytest.mark.parametrize("partition_by", [None, ["part"]], ids=["unpartitioned", "partitioned"])
@pytest.mark.parametrize(
    "condition",
    ["id < 10", "name IS NULL", "part = 'b'", "val > 40 OR part = 'b'", "id > 1000", None],
)
def test_delete_matches_deltalake(spark, tmp_path, duckdb_delta, partition_by, condition):
    ours, theirs = twin(deltalake_table(tmp_path / "src", partition_by), tmp_path)
    before = state(ours)
    result = run_delete(spark, ours, condition, "tok-d")
    deltalake_delete(theirs, condition)

    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
    m = result.metrics
    expected_deleted = 60 - len(rows_deltalake(theirs))
    assert m["numDeletedRows"] == expected_deleted
    if expected_deleted == 0:
        assert result.version is None and state(ours) == before
        return
    commit = last_commit(ours)
    assert commit["operation"] == "DELETE"
    assert commit["operationParameters"]["predicate"] == json.dumps([condition] if condition else [])
    assert commit["operationMetrics"]["numDeletedRows"] == str(expected_deleted)
    assert commit["tags"]["airflow.operationToken"] == "tok-d"


def test_partition_only_delete_removes_whole_files(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", ["part"])
    files_b = [f for f in DeltaTable(path).snapshot().files if f.partition_values["part"] == "b"]
    result = run_delete(spark, path, "part = 'b'", None)
    m = result.metrics
    assert m["numRemovedFiles"] == len(files_b)
    assert m["numAddedFiles"] == 0 and m["numCopiedRows"] == 0
    assert m["numDeletedRows"] == 20
    assert not [f for f in DeltaTable(path).snapshot().files if f.partition_values["part"] == "b"]


def test_data_delete_rewrites_touched_files_only(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", None, batches=4)
    result = run_delete(spark, path, "id IN (1, 2)", None)
    m = result.metrics
    assert (m["numRemovedFiles"], m["numAddedFiles"]) == (1, 1)
    assert (m["numDeletedRows"], m["numCopiedRows"]) == (2, 13)
    assert m["numAddedBytes"] > 0 and m["numRemovedBytes"] > 0


def test_delete_with_no_condition_removes_everything(spark, tmp_path, duckdb_delta):
    path = deltalake_table(tmp_path / "t", ["part"])
    result = run_delete(spark, path, None, None)
    assert result.metrics["numDeletedRows"] == 60
    assert DeltaTable(path).snapshot().files == []
    assert rows_duckdb(duckdb_delta, path) == []


@pytest.mark.parametrize("name", PLAIN_GOLDEN)
def test_delete_on_golden_copies(spark, tmp_path, golden_dir, duckdb_delta, name):
    """Delete the rows whose first column is at most its median (a partition
    condition on partitioned tables): DuckDB computes the expected rows."""
    ours, theirs = twin(golden_dir / name, tmp_path)
    first = DeltaTable(ours).snapshot().schema["fields"][0]["name"]
    pivot = duckdb_delta.execute(f"SELECT quantile_disc({first}, 0.5) FROM delta_scan('{theirs}')").fetchone()[0]
    cond = f"{first} <= {pivot!s}" if pivot is not None else f"{first} IS NULL"
    expected = rows_duckdb(duckdb_delta, theirs, where=f"({cond}) IS NOT TRUE")
    result = run_delete(spark, ours, cond, None)
    assert rows_duckdb(duckdb_delta, ours) == expected
    assert result.metrics["numDeletedRows"] == len(rows_duckdb(duckdb_delta, theirs)) - len(expected)
    if name not in DELTALAKE_UNREADABLE:
        deltalake_delete(theirs, cond)
        assert rows_deltalake(ours) == rows_deltalake(theirs) == expected


@pytest.mark.parametrize("condition", ["id >", "nope = 1", "id + 1", "", "count(id) > 1"])
def test_bad_condition_leaves_table_untouched(spark, tmp_path, condition):
    path = deltalake_table(tmp_path / "t", ["part"])
    before = state(path)
    with pytest.raises(InvalidInputError):
        run_delete(spark, path, condition, None)
    assert state(path) == before


def test_append_only_table_refuses_delete(spark, tmp_path):
    from dataclasses import replace

    path = deltalake_table(tmp_path / "t")
    table = DeltaTable(path)
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.appendOnly": "true"}))
    txn.commit()
    before = state(path)
    with pytest.raises(AppendOnlyViolationError):
        run_delete(spark, path, "id = 1", None)
    assert state(path) == before


@shadowing_cases
def test_delete_of_table_with_columns_named_like_scan_internals(
    spark, tmp_path, duckdb_delta, monkeypatch, layout, kind, which
):
    """A data column named ``_metadata`` (Spark's hidden file column) or like
    scan's helper columns neither hides the row's file nor gets overwritten."""
    condition = "v % 3 = 0 OR p = 1" if which == "mixed" else shadowing_condition(kind)
    ours, theirs = shadowing_twins(tmp_path, monkeypatch, layout, kind)
    result = run_delete(spark, ours, condition, None)
    deltalake_delete(theirs, condition)

    deleted = 60 - len(rows_deltalake(theirs))
    assert deleted > 0
    assert result.metrics["numDeletedRows"] == deleted
    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)


@pytest.mark.parametrize(
    ("level", "winner", "conflicts"),
    [
        (None, "append", True),  # delta-spark's default, Serializable
        ("WriteSerializable", "append", False),  # a blind append is let through
        ("WriteSerializable", "update", True),  # a change to the data read is not
    ],
)
def test_delete_checks_a_concurrent_write_at_the_tables_isolation_level(spark, tmp_path, level, winner, conflicts):
    """Two real transactions: our DELETE reads partition ``b`` and rewrites,
    then another writer commits into ``b`` (deltalake's blind append, or our
    UPDATE), then the DELETE commits. As delta-spark's
    ``checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn``: at
    ``Serializable`` every add conflicts, at ``WriteSerializable`` only
    those of a commit that is not a blind append."""
    import pyarrow as pa
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    path = deltalake_table(tmp_path / "t", ["part"])
    if level:
        RsTable(path).alter.set_table_properties({"delta.isolationLevel": level})
    cmd = DeleteCommand(spark, path, "part = 'b' AND id < 30", None)
    cmd.prepare()
    cmd.rewrite()
    if winner == "append":
        write_deltalake(path, pa.table({"id": [999], "name": ["x"], "part": ["b"], "val": [1.0]}), mode="append")
    else:
        run_update(spark, path, "part = 'b' AND id >= 30", {"val": "0"}, None)
    before = state(path)
    if conflicts:
        with pytest.raises(ConcurrentAppendError, match="partition part=b"):
            cmd.commit()
        cmd.abort()
        assert state(path)[:2] == before[:2]
        return
    result = cmd.commit()
    assert result.version == before[0] + 1
    assert last_commit(path)["isolationLevel"] == "WriteSerializable"
    rows = RsTable(path).to_pyarrow_table().to_pylist()
    assert any(r["id"] == 999 for r in rows)
    assert not any(r["id"] < 30 and r["part"] == "b" for r in rows)
