"""DELETE and UPDATE with deletion vectors (merge-on-read).

Each case runs the same commands on a table with ``delta.enableDeletionVectors``
and on a copy-on-write copy of the same data; delta-rs (through DataFusion,
which applies vectors) and DuckDB (delta-kernel-rs) must read the same rows
from both, and the commits must look as delta-spark's do.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_delta_provider.delta.errors import (
    ConcurrentModificationError,
    CorruptDeletionVectorError,
    InvalidInputError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.delete.spark import DeleteCommand
from tests.operations.dml.dml_support import commit_actions, rows_duckdb, rows_rs, state
from tests.operations.runs import run_append, run_checkpoint, run_delete, run_update, run_vacuum

DV_ON = {"delta.enableDeletionVectors": "true"}


@pytest.fixture(autouse=True)
def arrow_workers(spark, monkeypatch):
    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)


def _source(tmp_path, n: int = 120, files: int = 3) -> str:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    for i in range(files):
        ids = list(range(i * n // files, (i + 1) * n // files))
        pq.write_table(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "part": ["a" if x % 3 else "b" for x in ids],
                    "val": pa.array([x * 10 for x in ids], pa.int64()),
                }
            ),
            str(src / f"part-{i}.parquet"),
        )
    return str(src)


@pytest.fixture
def tables(spark, tmp_path):
    """(table with deletion vectors on, copy-on-write table) holding the same rows."""
    src = _source(tmp_path)
    dv, cow = str(tmp_path / "dv"), str(tmp_path / "cow")
    run_append(spark, dv, src, "parquet", partition_by=["part"], table_properties=DV_ON)
    run_append(spark, cow, src, "parquet", partition_by=["part"])
    return dv, cow


def _same_rows(dv: str, cow: str, duckdb_delta) -> None:
    expected = rows_rs(cow)
    assert rows_rs(dv) == expected
    assert rows_duckdb(duckdb_delta, dv) == expected


def _adds(path: str) -> list[dict]:
    return [a["add"] for a in commit_actions(path) if "add" in a]


def test_enabling_the_property_upgrades_the_protocol(spark, tmp_path):
    src = _source(tmp_path)
    path = str(tmp_path / "t")
    run_append(spark, path, src, "parquet")
    assert DeltaTable(path).snapshot().protocol.min_writer_version == 2
    run_append(spark, path, src, "parquet", table_properties=DV_ON)
    snap = DeltaTable(path).snapshot()
    assert snap.metadata.configuration["delta.enableDeletionVectors"] == "true"
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (3, 7)
    assert snap.protocol.reader_features == ("deletionVectors",)
    assert snap.protocol.writer_features == ("appendOnly", "deletionVectors", "invariants")
    with pytest.raises(InvalidInputError, match="true or false"):
        run_append(spark, path, src, "parquet", table_properties={"delta.enableDeletionVectors": "yes"})
    before = state(path)
    for unsupported in ("delta.enableIcebergCompatV2",):
        with pytest.raises(UnsupportedFeatureError, match=unsupported):
            run_append(spark, path, src, "parquet", table_properties={unsupported: "true"})
    with pytest.raises(InvalidInputError, match="add_constraint"):  # a constraint needs its rows checked
        run_append(spark, path, src, "parquet", table_properties={"delta.constraints.positive": "id > 0"})
    assert state(path) == before  # refused before anything was written
    run_append(spark, path, src, "parquet", table_properties={"owner": "me"})  # a user's own property
    assert DeltaTable(path).snapshot().metadata.configuration["owner"] == "me"


def test_delete_writes_vectors_and_no_data_file(spark, tables, duckdb_delta):
    dv, cow = tables
    files_before = {f for f in os.listdir(dv) if f.endswith(".bin")}
    result = run_delete(spark, dv, "id % 7 = 3")
    run_delete(spark, cow, "id % 7 = 3")
    _same_rows(dv, cow, duckdb_delta)
    m = result.metrics
    assert m["numDeletedRows"] == len([i for i in range(120) if i % 7 == 3])
    assert (m["numAddedFiles"], m["numRemovedFiles"], m["numCopiedRows"], m["numAddedBytes"]) == (0, 0, 0, 0)
    assert m["numDeletionVectorsUpdated"] == 0
    vectors = {f for f in os.listdir(dv) if f.endswith(".bin")} - files_before
    assert len(vectors) == 1  # one deletion vector file per commit
    adds = _adds(dv)
    assert m["numDeletionVectorsAdded"] == len(adds) > 1
    assert all(a["deletionVector"]["storageType"] == "u" for a in adds)
    assert all('"tightBounds":false' in a["stats"] for a in adds)
    removes = [a["remove"]["path"] for a in commit_actions(dv) if "remove" in a]
    assert sorted(removes) == sorted(a["path"] for a in adds)  # the same files, re-added with a vector


def test_delete_update_delete_with_a_checkpoint_between(spark, tables, duckdb_delta):
    dv, cow = tables
    for run in (
        lambda p: run_delete(spark, p, "id % 5 = 0"),
        lambda p: run_update(spark, p, "id % 5 = 1", {"val": "val + 1000", "part": "'c'"}),
        lambda p: run_checkpoint(spark, p),
        lambda p: run_delete(spark, p, "id % 5 = 2 OR val > 1000"),
        lambda p: run_update(spark, p, "id > 100", {"val": "-1"}),
    ):
        result = run(dv)
        run(cow)
        _same_rows(dv, cow, duckdb_delta)
    assert result.metrics["numCopiedRows"] == 0
    history = DeltaTable(dv).history()
    # Files that had a vector got a new one (the union) in the second DELETE.
    assert int(history[1]["operationMetrics"]["numDeletionVectorsUpdated"]) >= 1
    snap = DeltaTable(dv).snapshot()
    assert snap.num_records == len(rows_rs(cow))
    assert os.path.exists(os.path.join(dv, "_delta_log", f"{2:020d}.checkpoint.parquet"))


def test_a_file_whose_rows_all_go_is_removed_whole(spark, tables, duckdb_delta):
    dv, cow = tables
    in_b = [f for f in DeltaTable(dv).snapshot().files if f.partition_values["part"] == "b"]
    result = run_delete(spark, dv, "part = 'b' AND id >= 0")  # a data predicate
    run_delete(spark, cow, "part = 'b' AND id >= 0")
    _same_rows(dv, cow, duckdb_delta)
    assert result.metrics["numRemovedFiles"] == len(in_b) > 0 and result.metrics["numDeletionVectorsAdded"] == 0
    assert not _adds(dv)


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_both_io_modes_write_the_same_vectors(spark, tables, io, duckdb_delta):
    dv, cow = tables
    run_update(spark, dv, "id % 4 = 1", {"val": "0"}, io=io)
    run_delete(spark, dv, "val = 0 OR id % 4 = 2", io=io)
    run_update(spark, cow, "id % 4 = 1", {"val": "0"})
    run_delete(spark, cow, "val = 0 OR id % 4 = 2")
    _same_rows(dv, cow, duckdb_delta)
    cardinalities = sorted(f.deletion_vector.cardinality for f in DeltaTable(dv).snapshot().files if f.deletion_vector)
    # Each UPDATEd row was rewritten elsewhere and marked once; id 0 has val 0 too.
    assert sum(cardinalities) == len([i for i in range(120) if i % 4 in (1, 2) or i == 0])


def test_concurrent_vectors_on_one_file_conflict(spark, tables):
    """A DELETE prepared on a snapshot loses to a concurrent DELETE that put a
    vector on the same file: exactly one commits, and the loser leaves nothing."""
    dv, _cow = tables
    slow = DeleteCommand(spark, dv, "id = 4", token=None)
    slow.prepare()
    slow.rewrite()  # its vector file is written
    assert run_delete(spark, dv, "id = 5").version == 1  # ids 4 and 5 share a file
    before = state(dv)
    from airflow_delta_provider.spark.write.files import WrittenFiles

    # The re-added file is data added where this DELETE read: ConcurrentAppend,
    # which delta-spark's checker also finds first.
    with (
        pytest.raises(ConcurrentModificationError),
        WrittenFiles(slow.table.storage, slow.result.added, slow.result.other_files) as written,
    ):
        written.committing()
        slow.commit()
    assert state(dv)[:2] == before[:2] and not os.path.exists(os.path.join(dv, slow.result.other_files[0]))
    ids = {r[0] for r in rows_rs(dv)}
    assert 5 not in ids and 4 in ids


@pytest.mark.parametrize("damage", ["crc", "magic", "missing"])
def test_a_corrupt_vector_is_named_and_nothing_is_written(spark, tables, damage):
    dv, _cow = tables
    run_delete(spark, dv, "id = 1")
    vector = next(f for f in os.listdir(dv) if f.endswith(".bin"))
    target = os.path.join(dv, vector)
    data = bytearray(Path(target).read_bytes())
    if damage == "missing":
        os.remove(target)
    else:
        data[-1 if damage == "crc" else 5] ^= 0xFF  # the checksum, or the bitmap's magic number
        Path(target).write_bytes(bytes(data))
    before = state(dv)
    for run in (lambda: run_delete(spark, dv, "id = 2"), lambda: run_update(spark, dv, "id = 2", {"val": "0"})):
        with pytest.raises(CorruptDeletionVectorError, match=vector):
            run()
        assert state(dv) == before


def test_vacuum_keeps_vectors_in_use_and_deletes_the_rest(spark, tables):
    dv, _cow = tables
    run_delete(spark, dv, "id = 1")
    first = {f for f in os.listdir(dv) if f.endswith(".bin")}
    run_delete(spark, dv, "id = 2")  # the same file: its vector is replaced
    live = {f.deletion_vector.path_or_inline_dv for f in DeltaTable(dv).snapshot().files if f.deletion_vector}
    assert len(live) == 1
    kept = run_vacuum(spark, dv, retention_hours=168)  # the old vector is still retained
    assert first <= set(os.listdir(dv)) and kept.metrics["numDeletedFiles"] == 0
    run_vacuum(spark, dv, retention_hours=0, enforce_retention=False)
    remaining = {f for f in os.listdir(dv) if f.endswith(".bin")}
    assert len(remaining) == 1 and not (first & remaining)
    assert len(rows_rs(dv)) == 118


OPS = st.lists(
    st.tuples(st.sampled_from(["delete", "update"]), st.integers(2, 9), st.integers(0, 8)), min_size=1, max_size=4
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_deletes_and_updates_match_copy_on_write(spark, tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("prop")
    src = _source(tmp, n=90)
    dv, cow = str(tmp / "dv"), str(tmp / "cow")
    run_append(spark, dv, src, "parquet", partition_by=["part"], table_properties=DV_ON)
    run_append(spark, cow, src, "parquet", partition_by=["part"])
    for op, mod, rem in ops:
        condition = f"id % {mod} = {rem % mod}"
        for path in (dv, cow):
            if op == "delete":
                run_delete(spark, path, condition)
            else:
                run_update(spark, path, condition, {"val": f"val + {mod}"})
    assert rows_rs(dv) == rows_rs(cow)
    shutil.rmtree(tmp, ignore_errors=True)


def test_purge_rewrites_files_with_vectors_and_changes_no_row(spark, tables, duckdb_delta):
    from tests.operations.runs import run_reorg_purge

    dv, cow = tables
    for path in (dv, cow):
        run_delete(spark, path, "id % 40 = 1")  # about 2.5% of each touched file
        run_delete(spark, path, "id < 10 AND part = 'a'")  # more of the first files
    before = DeltaTable(dv).snapshot()
    marked = [f for f in before.files if f.deletion_vector is not None]
    heavy = [f for f in marked if f.deletion_vector.cardinality / f.num_records > 0.1]
    assert 0 < len(heavy) < len(marked)

    result = run_reorg_purge(spark, dv, min_deleted_ratio=0.1)
    assert result.metrics["numRemovedFiles"] == len(heavy) and result.metrics["numDeletionVectorsRemoved"] == len(heavy)
    actions = commit_actions(dv)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert set(info["operationMetrics"]) == {  # delta-spark's REORG metrics (the interop matrix compares them)
        "numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", "numDeletionVectorsRemoved",
        "minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize",
    }  # fmt: skip
    assert result.metrics["numPurgedRows"] > 0  # ours, in the result only
    assert all(not a["add"]["dataChange"] for a in actions if "add" in a)
    assert all(not a["remove"]["dataChange"] for a in actions if "remove" in a)
    assert all("deletionVector" not in a["add"] for a in actions if "add" in a)
    _same_rows(dv, cow, duckdb_delta)

    run_reorg_purge(spark, dv)  # the rest
    assert not [f for f in DeltaTable(dv).snapshot().files if f.deletion_vector is not None]
    _same_rows(dv, cow, duckdb_delta)
    assert run_reorg_purge(spark, dv).version is None  # nothing left to purge
    with pytest.raises(InvalidInputError, match="min_deleted_ratio"):
        run_reorg_purge(spark, dv, min_deleted_ratio=1.5)


def test_a_file_without_stats_gets_num_records_from_its_footer(spark, tables, duckdb_delta):
    """The protocol wants numRecords on a file with a vector; another writer's
    file may have no stats, so the count comes from the parquet footer."""
    import json

    dv, cow = tables
    log = os.path.join(dv, "_delta_log", f"{0:020d}.json")
    with open(log) as fh:
        lines = [json.loads(line) for line in fh]
    for action in lines:
        action.get("add", {}).pop("stats", None)
    with open(log, "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in lines) + "\n")
    assert all(f.num_records is None for f in DeltaTable(dv).snapshot().files)
    run_delete(spark, dv, "id % 9 = 4")
    run_delete(spark, cow, "id % 9 = 4")
    _same_rows(dv, cow, duckdb_delta)
    for add in _adds(dv):
        stats = json.loads(add["stats"])
        assert stats["tightBounds"] is False and stats["numRecords"] > add["deletionVector"]["cardinality"]
