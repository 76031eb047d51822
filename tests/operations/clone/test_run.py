"""The CLONE command, then Spark's DELETE, UPDATE, MERGE, REORG and
OPTIMIZE, VACUUM and RESTORE on the clone: the clone's rows follow a plain copy of the source put
through the same commands, while the source's log and files never change
(VACUUM on the clone deletes none of them). The Spark CLI clones with no
Spark session, and refuses bad input in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from airflow_delta_provider.delta.table import DeltaTable
from tests.operations.dml.dml_support import commit_actions, data_files, deltalake_table, rows_rs, state
from tests.operations.merge.test_spark import ON, UPSERT, source_rows, write_source
from tests.operations.runs import (
    run_clone,
    run_delete,
    run_merge,
    run_optimize,
    run_reorg_purge,
    run_restore,
    run_update,
    run_vacuum,
)

pytest.importorskip("deltalake")


def _stats(path: str) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every data file under ``path``: what 'never touched' compares."""
    return {rel: (os.stat(os.path.join(path, rel)).st_size, os.stat(os.path.join(path, rel)).st_mtime_ns)
            for rel in data_files(path)}  # fmt: skip


@pytest.mark.parametrize(
    ("io", "properties"),
    [("hadoop", {}), ("arrow", {"delta.enableDeletionVectors": "true"})],
    ids=["hadoop", "arrow-deletion-vectors"],
)
def test_dml_vacuum_and_restore_on_a_clone_leave_the_source_alone(spark, tmp_path, monkeypatch, io, properties):
    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)  # arrow workers: this interpreter
    src = deltalake_table(tmp_path / "src", ["part"])
    copy = str(tmp_path / "copy")
    shutil.copytree(src, copy)
    clone = str(tmp_path / "clone")
    before, files_before = state(src), _stats(src)

    result = run_clone(None, clone, src, table_properties=properties, token="tok-clone")

    assert (result.version, result.operation, result.metrics["sourceNumOfFiles"]) == (0, "CLONE", len(data_files(src)))
    assert rows_rs(clone) == rows_rs(src)  # (DuckDB's delta extension joins absolute paths to the root: docs/clone.rst)
    assert data_files(clone) == set()
    source = write_source(tmp_path, source_rows([3, 4, 17, 40, 41, 60, 61, 62]))
    for table in (clone, copy):
        run_delete(spark, table, "id < 10", io=io)
        if properties and table == clone:  # rows of the source's files marked in the clone's own vector file
            marked = [f for f in DeltaTable(clone).snapshot().files if f.deletion_vector is not None]
            assert marked and all(f.path.startswith("file:") for f in marked)
            assert any(rel.startswith("deletion_vector_") for rel in data_files(clone))
            assert run_reorg_purge(spark, clone, io=io).version is not None  # rewrites them into the clone
        run_update(spark, table, "part = 'b'", {"val": "val + 1"}, io=io)
        run_merge(spark, table, source, ON, UPSERT, io=io)
    assert rows_rs(clone) == rows_rs(copy)
    optimized = run_optimize(spark, clone, io=io)  # compacts the source's files with the clone's, into the clone
    assert optimized.version is not None and rows_rs(clone) == rows_rs(copy)
    assert all("://" not in f.path for f in DeltaTable(clone).snapshot().files)
    # The source's files were removed from the clone by the same absolute name they were added by.
    removed = [a["remove"]["path"] for a in commit_actions(clone, 1) if "remove" in a]
    added = {a["add"]["path"] for a in commit_actions(clone, 0) if "add" in a}
    assert removed and set(removed) <= added
    for lite in (False, True):
        run_vacuum(None, clone, retention_hours=0, enforce_retention=False, lite=lite)
    assert (state(src), _stats(src)) == (before, files_before)
    assert rows_rs(clone) == rows_rs(copy)

    restored = run_restore(None, clone, version=0)

    assert restored.metrics["numRestoredFiles"] > 0
    assert rows_rs(clone) == rows_rs(src)
    assert (state(src), _stats(src)) == (before, files_before)


def test_the_spark_cli_clones_with_no_spark_session(tmp_path) -> None:
    src = deltalake_table(tmp_path / "src", ["part"])
    clone = str(tmp_path / "clone")
    argv = [sys.executable, "-m", "airflow_delta_provider.spark", "clone", clone, "--source", src, "--version", "1"]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    assert len(rows_rs(clone)) == 40  # two of the three appends
    assert DeltaTable(clone).history()[0]["operation"] == "CLONE"
    again = subprocess.run(argv, capture_output=True, text=True)
    assert again.returncode != 0 and "TableAlreadyExistsError" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    replaced = subprocess.run([*argv[:-1], "2", "--replace"], capture_output=True, text=True)
    assert replaced.returncode == 0, replaced.stderr
    assert len(rows_rs(clone)) == 60
    late = subprocess.run([*argv[:-1], "7", "--replace"], capture_output=True, text=True)
    assert late.returncode != 0 and "VersionNotFoundError" in late.stderr
    assert DeltaTable(clone).latest_version() == 1


def test_the_change_data_feed_of_a_clone_reads_the_source_files(spark, tmp_path) -> None:
    """With the feed turned on by the clone's properties, its version 0
    inserts the source's rows (read from the source's files) and a DELETE on
    the clone records its deleted rows."""
    import pyarrow.parquet as pq

    from tests.operations.runs import run_changes

    src = deltalake_table(tmp_path / "src", ["part"])
    clone = str(tmp_path / "clone")
    run_clone(None, clone, src, table_properties={"delta.enableChangeDataFeed": "true"})
    run_delete(spark, clone, "id < 10", io="hadoop")
    output = tmp_path / "changes"

    run_changes(spark, clone, 0, None, str(output), io="hadoop")

    changes = pq.read_table(output).to_pylist()
    kinds = [(c["_change_type"], c["_commit_version"]) for c in changes]
    assert (kinds.count(("insert", 0)), kinds.count(("delete", 1))) == (60, 10)


def test_which_readers_read_a_local_shallow_clone(tmp_path, duckdb_delta) -> None:
    """docs/clone.rst and the README, pinned: a local clone's adds are absolute ``file:/...``
    paths. This package and delta-rs's DataFusion scan (``QueryBuilder``) read them; deltalake's
    ``to_pyarrow_table``/``to_pandas`` (its pyarrow dataset) and DuckDB's delta extension join
    the path to the clone's root and fail. (This package's Spark scan reads it: the DML tests
    above; delta-spark too: tests/delta_spark.)"""
    src = deltalake_table(tmp_path / "src", ["part"])
    clone = str(tmp_path / "clone")
    subprocess.run(
        [sys.executable, "-m", "airflow_delta_provider.spark", "clone", clone, "--source", src],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert len(rows_rs(clone)) == 60 and rows_rs(clone) == rows_rs(src)
    import deltalake

    with pytest.raises(Exception, match="not found"):
        deltalake.DeltaTable(clone).to_pyarrow_table()
    with pytest.raises(Exception, match=r"No such file|Cannot open file"):
        duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{clone}')").fetchall()
