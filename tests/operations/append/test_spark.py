"""run_append(): create, append, evolve, overwrite; bad input changes nothing."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    InvalidInputError,
    InvariantViolationError,
    SchemaMismatchError,
)
from airflow_delta_provider.delta.table import DeltaTable
from tests.operations.runs import run_append
from tests.spark.conftest import disk_files, table_rows


def _source(tmp_path, table: pa.Table, name="src") -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    pq.write_table(table, str(folder / "part-0.parquet"))
    return str(folder)


def test_creates_a_partitioned_table_then_appends(spark, tmp_path, duckdb_delta):
    src = _source(tmp_path, pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}))
    path = str(tmp_path / "t")
    first = run_append(spark, path, src, "parquet", partition_by=["p"], token="t1")
    second = run_append(spark, path, src, "parquet")
    assert (first.version, second.version) == (0, 1)
    assert first.metrics["numOutputRows"] == 3 and first.metrics["numFiles"] == 2
    snap = DeltaTable(path).snapshot()
    assert snap.partition_columns == ["p"]
    assert all(f["nullable"] for f in snap.schema["fields"])
    info = DeltaTable(path).history()[-1]
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert info["tags"]["airflow.operationToken"] == "t1"
    assert DeltaTable(path).history()[0]["isBlindAppend"] is True
    assert table_rows(path) == sorted([(1, "a"), (2, "b"), (3, "a")] * 2, key=repr)
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0] == 6


@pytest.mark.parametrize(
    "fmt, write",
    [
        ("csv", lambda t, p: Path(p, "a.csv").write_text("id,name\n1,x\n2,y\n")),
        ("json", lambda t, p: Path(p, "a.json").write_text('{"id":1,"name":"x"}\n{"id":2,"name":"y"}\n')),
    ],
)
def test_csv_and_json_sources(spark, tmp_path, fmt, write):
    src = tmp_path / "src"
    src.mkdir()
    write(None, str(src))
    path = str(tmp_path / "t")
    options = {"header": "true", "inferSchema": "true"} if fmt == "csv" else {}
    run_append(spark, path, str(src), fmt, options=options)
    assert [r[1] for r in table_rows(path)] == ["x", "y"]


def test_delta_source_is_read_through_our_scan(spark, tmp_path, make_table):
    src = make_table(pa.table({"id": [7, 8]}), name="source")
    path = str(tmp_path / "t")
    run_append(spark, path, src, "delta")
    assert table_rows(path) == [(7,), (8,)]


def test_merge_schema_adds_columns_and_widens(spark, tmp_path, make_table):
    path = make_table(pa.table({"id": pa.array([1], pa.int8()), "s": pa.array([{"a": 1}])}))
    src = _source(
        tmp_path,
        pa.table(
            {
                "id": pa.array([2], pa.int32()),
                "s": pa.array([{"a": 2, "b": "n"}]),
                "extra": ["e"],
            }
        ),
    )
    run_append(spark, path, src, "parquet", merge_schema=True)
    fields = DeltaTable(path).snapshot().schema["fields"]
    assert [f["name"] for f in fields] == ["id", "s", "extra"]
    assert fields[0]["type"] == "integer"
    assert [f["name"] for f in fields[1]["type"]["fields"]] == ["a", "b"]
    rows = table_rows(path)
    assert rows == [(1, {"a": 1, "b": None}, None), (2, {"a": 2, "b": "n"}, "e")]
    # recorded as delta-spark's DataFrame writer records mergeSchema
    params = DeltaTable(path).history()[0]["operationParameters"]
    assert params == {"mode": "Append", "partitionBy": "[]", "canMergeSchema": True}


def test_missing_column_becomes_null(spark, tmp_path, make_table):
    path = make_table(pa.table({"id": [1], "s": ["x"]}))
    run_append(spark, path, _source(tmp_path, pa.table({"id": [2]})), "parquet")
    assert table_rows(path) == [(1, "x"), (2, None)]


def test_overwrite_replaces_files_and_overwrite_schema_replaces_schema(spark, tmp_path, make_table):
    path = make_table(pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    table_id = DeltaTable(path).snapshot().metadata.id
    res = run_append(spark, path, _source(tmp_path, pa.table({"id": [9], "p": ["z"]})), "parquet", mode="overwrite")
    assert res.metrics["numRemovedFiles"] == 2 and table_rows(path) == [(9, "z")]
    assert DeltaTable(path).history()[0]["isBlindAppend"] is False
    new = _source(tmp_path, pa.table({"k": ["q"], "v": [1.5]}), name="src2")
    run_append(spark, path, new, "parquet", mode="overwrite", overwrite_schema=True, partition_by=["k"])
    snap = DeltaTable(path).snapshot()
    assert snap.partition_columns == ["k"] and snap.metadata.id == table_id
    assert table_rows(path) == [("q", 1.5)]
    # recorded as delta-spark's DataFrame writer records overwriteSchema; a plain overwrite records neither,
    # and partitionBy is what the writer asked for, not the table's
    history = DeltaTable(path).history()
    assert history[0]["operationParameters"] == {
        "mode": "Overwrite",
        "partitionBy": '["k"]',
        "canOverwriteSchema": True,
    }
    assert history[1]["operationParameters"] == {"mode": "Overwrite", "partitionBy": "[]"}


def test_txn_already_recorded_is_a_no_op(spark, tmp_path):
    """A seen txn writes nothing; its result names the commit that recorded it (a rerun's
    version), or None for a version the application moved past without writing it."""
    src = _source(tmp_path, pa.table({"id": [1]}))
    path = str(tmp_path / "t")
    assert run_append(spark, path, src, "parquet", txn_app_id="job", txn_version=3).version == 0
    assert run_append(spark, path, src, "parquet", txn_app_id="job", txn_version=3).version == 0
    assert run_append(spark, path, src, "parquet", txn_app_id="job", txn_version=2).version is None
    assert run_append(spark, path, src, "parquet", txn_app_id="job", txn_version=4).version == 1
    assert DeltaTable(path).snapshot().txn_version("job") == 4
    assert len(table_rows(path)) == 2


def _invariant_table(make_table):
    from airflow_delta_provider.delta.schema.types import schema_string

    path = make_table(pa.table({"id": pa.array([1], pa.int64()), "n": pa.array([1], pa.int64())}))
    table = DeltaTable(path)
    snap = table.snapshot()
    schema = snap.schema
    schema["fields"][0]["nullable"] = False
    schema["fields"][1]["metadata"] = {"delta.invariants": json.dumps({"expression": {"expression": "n > 0"}})}
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    from dataclasses import replace

    txn.update_metadata(
        replace(snap.metadata, schema_string=schema_string(schema), configuration={"delta.appendOnly": "true"})
    )
    txn.commit()
    return path


BAD = {
    "extra-column": (pa.table({"id": [1], "n": [1], "zzz": [1]}), {}, SchemaMismatchError),
    "type-mismatch": (pa.table({"id": ["x"], "n": [1]}), {}, SchemaMismatchError),
    "case-only": (pa.table({"ID": [1], "n": [1]}), {}, SchemaMismatchError),
    "not-null": (pa.table({"id": pa.array([None], pa.int64()), "n": [1]}), {}, InvariantViolationError),
    "invariant": (pa.table({"id": [1, 2], "n": [1, -1]}), {}, InvariantViolationError),
    "append-only-overwrite": (pa.table({"id": [1], "n": [1]}), {"mode": "overwrite"}, AppendOnlyViolationError),
    "bad-format": (pa.table({"id": [1], "n": [1]}), {"format": "avro"}, InvalidInputError),
    "bad-source": (None, {}, InvalidInputError),
    "partition-mismatch": (pa.table({"id": [1], "n": [1]}), {"partition_by": ["n"]}, InvalidInputError),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_leaves_the_table_untouched(spark, tmp_path, make_table, case):
    data, kwargs, error = BAD[case]
    path = _invariant_table(make_table)
    src = _source(tmp_path, data) if data is not None else str(tmp_path / "nowhere")
    before_version, before_files = DeltaTable(path).latest_version(), disk_files(path)
    kwargs = {"format": "parquet", **kwargs}
    fmt = kwargs.pop("format")
    with pytest.raises(error):
        run_append(spark, path, src, fmt, **kwargs)
    assert DeltaTable(path).latest_version() == before_version
    assert disk_files(path) == before_files


def test_two_concurrent_appends_both_land(spark, tmp_path, make_table):
    path = make_table(pa.table({"id": [0]}))
    sources = [_source(tmp_path, pa.table({"id": [i]}), name=f"s{i}") for i in (1, 2)]
    results, errors = [], []

    def go(src):
        try:
            results.append(run_append(spark, path, src, "parquet").version)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == [1, 2]
    assert table_rows(path) == [(0,), (1,), (2,)]


def test_append_landing_after_our_read_is_not_lost(spark, tmp_path, make_table, monkeypatch):
    """An append whose snapshot went stale retries on top of the winner."""
    from airflow_delta_provider.operations.append import spark as append_module

    path = make_table(pa.table({"id": [0]}))
    real = append_module.write_files

    def write_then_race(*args, **kwargs):
        adds = real(*args, **kwargs)
        from deltalake import write_deltalake

        write_deltalake(path, pa.table({"id": [99]}), mode="append")
        return adds

    monkeypatch.setattr(append_module, "write_files", write_then_race)
    res = run_append(spark, path, _source(tmp_path, pa.table({"id": [1]})), "parquet")
    assert res.version == 2
    assert table_rows(path) == [(0,), (1,), (99,)]


@pytest.mark.parametrize("name", ["basic-with-inserts-updates", "data-reader-partition-values", "snapshot-data3"])
def test_append_to_golden_copies(spark, golden_copy, name, duckdb_delta):
    path = golden_copy(name)
    before = table_rows(path)
    res = run_append(spark, path, path, "delta")
    assert res.version == DeltaTable(path).latest_version()
    after = table_rows(path)
    assert len(after) == 2 * len(before)
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0] == len(after)


def test_failure_after_the_commit_landed_keeps_its_files(spark, tmp_path, make_table, monkeypatch):
    """An error once N.json exists (here from the post-commit step) must not
    delete the files that version references."""
    from airflow_delta_provider.delta.partitions import to_absolute
    from airflow_delta_provider.delta.transaction import post_commit

    path = make_table(pa.table({"id": [0]}))

    def broken_post_commit(table, result, *args, **kwargs):
        raise RuntimeError(f"post-commit step of version {result.version} failed")

    monkeypatch.setattr(post_commit, "run_post_commit", broken_post_commit)
    with pytest.raises(RuntimeError, match="post-commit"):
        run_append(spark, path, _source(tmp_path, pa.table({"id": [1, 2]})), "parquet")
    monkeypatch.undo()
    snap = DeltaTable(path).snapshot()
    assert snap.version == 1
    assert all(os.path.exists(to_absolute(path, f.path)) for f in snap.files)
    assert table_rows(path) == [(0,), (1,), (2,)]


def test_conflict_at_commit_deletes_the_written_files(spark, tmp_path, make_table, monkeypatch):
    """A commit refused (CommitFailedError) leaves no data file behind."""
    from airflow_delta_provider.delta.errors import CommitFailedError
    from airflow_delta_provider.delta.transaction.transaction import Transaction

    path = make_table(pa.table({"id": [0]}))
    before = disk_files(path)

    def refused(self, *args, **kwargs):
        raise CommitFailedError("gave up after 0 commit attempts")

    monkeypatch.setattr(Transaction, "commit", refused)
    with pytest.raises(CommitFailedError):
        run_append(spark, path, _source(tmp_path, pa.table({"id": [1]})), "parquet")
    assert disk_files(path) == before


def test_in_commit_timestamps_through_table_properties(spark, tmp_path, duckdb_delta):
    """Turned on by APPEND's table_properties: every later commit (an UPDATE
    too) carries one, strictly after the last, and both readers read the table."""
    from deltalake import DeltaTable as RsTable

    from tests.operations.runs import run_update

    path = str(tmp_path / "t")
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), src / "a.parquet")
    run_append(spark, path, str(src), format="parquet")
    run_append(spark, path, str(src), format="parquet", table_properties={"delta.enableInCommitTimestamps": "true"})
    run_update(spark, path, "id = 2", {"id": "20"})
    table = DeltaTable(path)
    assert "inCommitTimestamp" in table.snapshot().protocol.writer_features
    stamps = [h.get("inCommitTimestamp") for h in reversed(table.history())]
    assert stamps[0] is None and stamps[1] < stamps[2]
    assert table.snapshot().metadata.configuration["delta.inCommitTimestampEnablementVersion"] == "1"
    assert sorted(RsTable(path).to_pyarrow_table()["id"].to_pylist()) == [1, 1, 3, 3, 20, 20]
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}') WHERE id = 20").fetchone() == (2,)


def test_creating_a_table_over_untracked_data_files_is_refused_and_writes_nothing(spark, tmp_path):
    """A folder of parquet files with no _delta_log (issue 27's new user): the
    APPEND is refused, nothing is written; an overwrite on purpose replaces them."""
    from airflow_delta_provider.delta.errors import UntrackedDataFilesError

    path = tmp_path / "t"
    path.mkdir()
    pq.write_table(pa.table({"id": list(range(5))}), str(path / "part-0.parquet"))
    src = _source(tmp_path, pa.table({"id": [10, 11]}))
    with pytest.raises(UntrackedDataFilesError, match=r"holds 1 data file\(s\) but no Delta table.*: part-0.parquet\."):
        run_append(spark, str(path), src, "parquet")
    assert sorted(p.name for p in path.iterdir()) == ["part-0.parquet"]  # no log, no data file, no staging folder

    replaced = run_append(spark, str(path), src, "parquet", mode="overwrite")
    assert replaced.version == 0 and table_rows(str(path)) == [(10,), (11,)]


def test_user_metadata_is_recorded_in_the_commit(spark, tmp_path, make_table):
    """delta-spark's ``userMetadata`` write option: one spec field, from the CLI and the operator alike."""
    from airflow_delta_provider.operations.argv import parse_request
    from airflow_delta_provider.operations.runners import run_spec
    from airflow_delta_provider.operators.delta import DeltaAppendOperator

    source = make_table(pa.table({"id": [1, 2]}))
    table = str(tmp_path / "t")
    argv = [
        "append",
        table,
        "--source",
        source,
        "--format",
        "delta",
        "--user-metadata",
        "backfill {ds}",
        "--io",
        "hadoop",
    ]
    spec = parse_request(argv)
    assert run_spec(spark, spec).version == 0
    info = DeltaTable(table).history()[0]
    assert info["userMetadata"] == "backfill {ds}"
    operator = DeltaAppendOperator(
        task_id="a", table_path=table, source=source, source_format="delta", user_metadata="x"
    )
    assert "user_metadata" in operator.template_fields
    assert operator.cli_arguments()[-2:] == ["--user-metadata", "x"]
