"""UPDATE (operations/update/spark.py): same rows as deltalake's own update on an
identical copy, readable by deltalake and DuckDB; bad input changes nothing;
a concurrent append into a partition it read makes it fail."""

from __future__ import annotations

import json
import os
from urllib.parse import unquote

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    InvalidInputError,
    InvariantViolationError,
)
from airflow_delta_provider.operations.update.spark import UpdateCommand
from tests.operations.dml.dml_support import (
    DELTALAKE_UNREADABLE,
    PLAIN_GOLDEN,
    SHADOWING_KINDS,
    commit_actions,
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
from tests.operations.runs import run_update

pytest.importorskip("deltalake")


def deltalake_update(path: str, updates: dict[str, str], predicate: str | None) -> dict:
    from deltalake import DeltaTable

    return DeltaTable(path).update(updates=updates, predicate=predicate)


@pytest.mark.parametrize("partition_by", [None, ["part"]], ids=["unpartitioned", "partitioned"])
@pytest.mark.parametrize(
    "condition, updates",
    [
        ("id < 10", {"val": "val * 2", "name": "'changed'"}),  # data predicate, some files
        ("name IS NULL", {"name": "'was null'"}),
        ("part = 'b'", {"val": "0"}),  # partition-only when partitioned
        (None, {"id": "id + 1000"}),  # every row
        ("id % 2 = 0 AND part = 'a'", {"part": "'c'"}),  # moves rows to a new partition
        ("id > 1000", {"val": "1"}),  # no match: no commit
    ],
)
def test_update_matches_deltalake(spark, tmp_path, duckdb_delta, partition_by, condition, updates):
    from airflow_delta_provider.delta.table import DeltaTable

    ours, theirs = twin(deltalake_table(tmp_path / "src", partition_by), tmp_path)
    before = state(ours)
    rows_per_file = {f.path: f.num_records for f in DeltaTable(ours).snapshot().files}
    result = run_update(spark, ours, condition, updates, "tok-1")
    theirs_metrics = deltalake_update(theirs, updates, condition)

    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
    m = result.metrics
    assert result.operation == "UPDATE"
    if m["numUpdatedRows"] == 0:
        assert result.version is None
        assert state(ours) == before
        return
    assert result.version == before[0] + 1
    commit = last_commit(ours)
    assert commit["operation"] == "UPDATE"
    assert commit["operationParameters"]["predicate"] == json.dumps([condition] if condition else [])
    assert commit["operationMetrics"]["numUpdatedRows"] == str(m["numUpdatedRows"])
    assert commit["tags"]["airflow.operationToken"] == "tok-1"
    assert m["numUpdatedRows"] == theirs_metrics["num_updated_rows"]
    # Every row of the rewritten files counted once: updated + copied.
    removed = [a["remove"]["path"] for a in commit_actions(ours) if "remove" in a]
    assert len(removed) == m["numRemovedFiles"] >= 1 and m["numAddedFiles"] >= 1
    assert m["numUpdatedRows"] + m["numCopiedRows"] == sum(rows_per_file[p] for p in removed)


def test_update_rewrites_only_touched_files(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", None, batches=4)  # ids 0..14, 15..29, ...
    from airflow_delta_provider.delta.table import DeltaTable

    files_before = {f.path for f in DeltaTable(path).snapshot().files}
    result = run_update(spark, path, "id = 3 OR name = 'n5'", {"val": "-1"}, None)
    snap = DeltaTable(path).snapshot()
    assert result.metrics["numRemovedFiles"] == 1
    assert result.metrics["numUpdatedRows"] == 2
    assert result.metrics["numCopiedRows"] == 13
    assert len(files_before - {f.path for f in snap.files}) == 1


def test_partition_only_update_copies_no_rows(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", ["part"])
    result = run_update(spark, path, "part = 'b'", {"val": "0"}, None)
    assert result.metrics["numCopiedRows"] == 0
    assert result.metrics["numUpdatedRows"] == 20


def test_update_of_partition_column_moves_rows(spark, tmp_path, duckdb_delta):
    path = deltalake_table(tmp_path / "t", ["part"])
    run_update(spark, path, "id < 5", {"part": "'moved'"}, None)
    from airflow_delta_provider.delta.table import DeltaTable

    moved = [f for f in DeltaTable(path).snapshot().files if f.partition_values == {"part": "moved"}]
    assert moved and all(f.path.startswith("part=moved/") for f in moved)
    got = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}') WHERE part = 'moved'").fetchone()
    assert got == (5,)


@pytest.mark.parametrize("name", PLAIN_GOLDEN)
def test_update_on_golden_copies(spark, tmp_path, golden_dir, duckdb_delta, name):
    """Every file holding a non-null first column is rewritten with that column
    set to itself: the rows must come back unchanged, through both readers."""
    from airflow_delta_provider.delta.table import DeltaTable

    ours, theirs = twin(golden_dir / name, tmp_path)
    first = DeltaTable(ours).snapshot().schema["fields"][0]["name"]
    cond = f"{first} IS NOT NULL"
    updates = {first: first}
    expected = rows_duckdb(duckdb_delta, theirs)
    result = run_update(spark, ours, cond, updates, None)
    assert result.version is not None and result.metrics["numUpdatedRows"] > 0
    assert rows_duckdb(duckdb_delta, ours) == expected
    if name not in DELTALAKE_UNREADABLE:
        deltalake_update(theirs, updates, cond)
        assert rows_deltalake(ours) == rows_deltalake(theirs) == expected


def test_update_set_is_cast_to_column_type(spark, tmp_path):
    path = deltalake_table(tmp_path / "t")
    run_update(spark, path, "id = 1", {"id": "'101'", "val": "7"}, None)
    from deltalake import DeltaTable

    t = DeltaTable(path).to_pyarrow_table()
    assert t.schema.field("id").type == pa.int64()
    assert 101 in t.column("id").to_pylist()


def test_update_sets_nested_columns(spark, tmp_path, duckdb_delta):
    """SET on struct, array and map columns; the values read back the same
    through deltalake and DuckDB."""
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "nested")
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "s": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "l": pa.array([[1], [2, 3]], pa.list_(pa.int64())),
            "m": pa.array([[("k", 1)], [("k", 2)]], pa.map_(pa.string(), pa.int64())),
        }
    )
    write_deltalake(path, data)
    result = run_update(
        spark,
        path,
        "id = 2",
        {"s": "named_struct('a', s.a * 10, 'b', 'z')", "l": "array(7, 8, 9)", "m": "map('q', 5)"},
        None,
    )
    assert result.metrics["numUpdatedRows"] == 1
    rows = sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows[1]["s"] == {"a": 20, "b": "z"}
    assert rows[1]["l"] == [7, 8, 9]
    assert rows[1]["m"] == [("q", 5)]
    assert rows[0]["s"] == {"a": 1, "b": "x"} and rows[0]["l"] == [1]
    got = duckdb_delta.execute(f"SELECT s.a, len(l) FROM delta_scan('{path}') ORDER BY id").fetchall()
    assert got == [(1, 1), (20, 3)]


@pytest.mark.parametrize(
    "condition, updates, error",
    [
        ("id >", {"val": "1"}, InvalidInputError),  # bad SQL
        ("nope = 1", {"val": "1"}, InvalidInputError),  # unknown column
        ("id + 1", {"val": "1"}, InvalidInputError),  # not boolean
        ("id = 1", {"nope": "1"}, InvalidInputError),  # SET on unknown column
        ("id = 1", {"val": "nope + 1"}, InvalidInputError),  # SET reads unknown column
        ("id = 1", {"val": "val +"}, InvalidInputError),  # SET bad SQL
        ("id = 1", {}, InvalidInputError),  # nothing to SET
    ],
)
def test_bad_input_leaves_table_untouched(spark, tmp_path, condition, updates, error):
    path = deltalake_table(tmp_path / "t", ["part"])
    before = state(path)
    with pytest.raises(error):
        run_update(spark, path, condition, updates, None)
    assert state(path) == before


def _set_property(path: str, key: str, value: str) -> None:
    from dataclasses import replace

    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(path)
    snap = table.snapshot()
    md = snap.metadata
    txn = table.transaction("SET TBLPROPERTIES", {"properties": json.dumps({key: value})}, snap)
    txn.update_metadata(replace(md, configuration={**md.configuration, key: value}))
    txn.commit()


def test_append_only_table_refuses_update(spark, tmp_path):
    path = deltalake_table(tmp_path / "t")
    _set_property(path, "delta.appendOnly", "true")
    before = state(path)
    with pytest.raises(AppendOnlyViolationError):
        run_update(spark, path, "id = 1", {"val": "1"}, None)
    assert state(path) == before


def _with_invariant(path: str) -> None:
    from dataclasses import replace

    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(path)
    snap = table.snapshot()
    schema = snap.schema
    for f in schema["fields"]:
        if f["name"] == "val":
            f["metadata"] = {"delta.invariants": json.dumps({"expression": {"expression": "val >= 0"}})}
        if f["name"] == "id":
            f["nullable"] = False
    txn = table.transaction("CHANGE COLUMN", {}, snap)
    txn.update_metadata(replace(snap.metadata, schema_string=json.dumps(schema)))
    txn.commit()


@pytest.mark.parametrize("updates", [{"val": "-1"}, {"id": "NULL"}], ids=["invariant", "not-null"])
def test_update_breaking_an_invariant_writes_nothing(spark, tmp_path, updates):
    path = deltalake_table(tmp_path / "t")
    _with_invariant(path)
    before = state(path)
    with pytest.raises(InvariantViolationError):
        run_update(spark, path, "id = 1", updates, None)
    assert state(path) == before
    run_update(spark, path, "id = 1", {"val": "5"}, None)  # a valid update still works


def test_update_racing_an_append_into_its_partition_fails(spark, tmp_path):
    """delta-spark rule 5: files added to a partition the UPDATE read conflict.

    The race is staged step by step: our UPDATE reads and rewrites, then a
    concurrent append commits into partition 'b', then our commit runs.
    """
    from deltalake import write_deltalake

    path = deltalake_table(tmp_path / "t", ["part"])
    cmd = UpdateCommand(spark, path, "part = 'b' AND id < 30", {"val": "0"}, None)
    cmd.prepare()
    cmd.rewrite()
    written = {f.path for f in cmd.result.added}
    assert written
    write_deltalake(path, pa.table({"id": [999], "name": ["x"], "part": ["b"], "val": [1.0]}), mode="append")
    before = state(path)
    with pytest.raises(ConcurrentAppendError):
        cmd.commit()
    cmd.abort()
    after = state(path)
    assert after[:2] == before[:2]  # no new version
    assert after[2] == before[2] - {unquote(p) for p in written}  # our files are gone


def test_update_at_write_serializable_lets_a_blind_append_through(spark, tmp_path):
    """``delta.isolationLevel=WriteSerializable``: the race above commits, as
    delta-spark lets a blind append through at that level, and the commit
    records the level; a concurrent UPDATE of the partition read still conflicts."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    path = deltalake_table(tmp_path / "t", ["part"])
    RsTable(path).alter.set_table_properties({"delta.isolationLevel": "WriteSerializable"})
    cmd = UpdateCommand(spark, path, "part = 'b' AND id < 30", {"val": "0"}, None)
    cmd.prepare()
    cmd.rewrite()
    write_deltalake(path, pa.table({"id": [999], "name": ["x"], "part": ["b"], "val": [1.0]}), mode="append")
    before = state(path)
    result = cmd.commit()
    assert result.version == before[0] + 1
    assert last_commit(path)["isolationLevel"] == "WriteSerializable"
    rows = RsTable(path).to_pyarrow_table().to_pylist()
    assert any(r["id"] == 999 and r["val"] == 1.0 for r in rows)
    assert all(r["val"] == 0 for r in rows if r["part"] == "b" and r["id"] < 30)

    cmd = UpdateCommand(spark, path, "part = 'b' AND id < 30", {"val": "1"}, None)
    cmd.prepare()
    cmd.rewrite()
    run_update(spark, path, "part = 'b' AND id >= 30", {"val": "2"}, None)
    before = state(path)
    with pytest.raises(ConcurrentAppendError, match="partition part=b"):
        cmd.commit()
    cmd.abort()
    assert state(path)[:2] == before[:2]


def test_update_after_an_append_elsewhere_commits(spark, tmp_path):
    """An append into a partition the UPDATE did not read does not conflict."""
    from deltalake import write_deltalake

    path = deltalake_table(tmp_path / "t", ["part"])
    cmd = UpdateCommand(spark, path, "part = 'b'", {"val": "0"}, None)
    cmd.prepare()
    cmd.rewrite()
    write_deltalake(path, pa.table({"id": [999], "name": ["x"], "part": ["a"], "val": [1.0]}), mode="append")
    result = cmd.commit()
    assert result.version == 4
    assert os.path.isdir(os.path.join(path, "part=b"))


@shadowing_cases
def test_update_of_table_with_columns_named_like_scan_internals(
    spark, tmp_path, duckdb_delta, monkeypatch, layout, kind, which
):
    """A data column named ``_metadata`` (Spark's hidden file column) or like
    scan's helper columns neither hides the row's file nor gets overwritten."""
    columns, struct = SHADOWING_KINDS[kind]
    if which == "mixed":  # a data and a partition column
        condition, updates = "v % 3 = 0 OR p = 1", {columns[0]: "'changed'", "v": "v + 100"}
    else:
        condition, updates = shadowing_condition(kind), {"v": "v * 2", columns[-1]: "'changed'"}
    if struct:  # a string is no value for the struct column
        updates.pop(columns[0], None)
    ours, theirs = shadowing_twins(tmp_path, monkeypatch, layout, kind)
    result = run_update(spark, ours, condition, updates, None)
    expected = deltalake_update(theirs, updates, condition)

    assert expected["num_updated_rows"] > 0
    assert result.metrics["numUpdatedRows"] == expected["num_updated_rows"]
    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
