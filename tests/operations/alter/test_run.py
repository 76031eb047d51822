"""ALTER on tables the Spark engine wrote: DROP FEATURE of ``deletionVectors``
and ``typeWidening``, whose preparation rewrites data files (REORG) before the
core downgrades the protocol. delta-rs, DuckDB and delta-spark read the
downgraded tables, and refusals write nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import decode_path
from airflow_delta_provider.delta.schema.widening import all_changes
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.features import listed_features
from tests.operations.alter.test_drop_feature import _age_log
from tests.operations.dml.dml_support import rows_duckdb, rows_rs, state
from tests.operations.runs import run_alter, run_append, run_delete

DROP_DV = {"drop_feature": {"name": "deletionVectors"}}


def _features(path: str) -> set[str]:
    readers, writers = listed_features(DeltaTable(path).snapshot().protocol)
    return readers | writers


def _dv_table(spark, tmp_path: Path, name: str) -> str:
    """A table with deletion vectors on, and live files carrying them."""
    src = tmp_path / f"{name}-src"
    src.mkdir()
    for i in range(2):
        ids = list(range(i * 50, (i + 1) * 50))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{x}" for x in ids]}), src / f"{i}.parquet")
    path = str(tmp_path / name)
    run_append(spark, path, str(src), "parquet", table_properties={"delta.enableDeletionVectors": "true"})
    run_delete(spark, path, "id % 7 = 0")
    assert any(f.deletion_vector is not None for f in DeltaTable(path).snapshot().files)
    return path


EXPECTED_IDS = [i for i in range(100) if i % 7]


def test_drop_deletion_vectors_purges_then_downgrades_and_every_reader_reads(
    spark, tmp_path, duckdb_delta, delta_spark
):
    """delta-spark's ``DeletionVectorsPreDowngradeCommand`` then the fast drop:
    no new vectors, the files with vectors rewritten (REORG), tombstones for
    the vector files, three checkpointed empty commits, and the downgrade
    behind checkpointProtection. Without Spark the drop is refused."""
    path = _dv_table(spark, tmp_path, "t")
    before = state(path)
    with pytest.raises(InvalidInputError, match=r"dropping deletionVectors rewrites 2 data file\(s\).*needs Spark"):
        run_alter(None, path, DROP_DV)
    assert state(path) == before
    result = run_alter(spark, path, DROP_DV)
    snap = DeltaTable(path).snapshot()
    assert result.version == snap.version
    assert "deletionVectors" not in _features(path) and "checkpointProtection" in _features(path)
    assert snap.configuration["delta.requireCheckpointProtectionBeforeVersion"] == str(snap.version)
    assert "delta.enableDeletionVectors" not in snap.configuration
    assert all(f.deletion_vector is None for f in snap.files)
    ops = [h["operation"] for h in DeltaTable(path).history()][:7]
    assert ops == [
        "DROP FEATURE", "Empty Commit", "Empty Commit", "Empty Commit",
        "Deletion Vector Tombstones", "REORG", "UNSET TBLPROPERTIES",
    ]  # fmt: skip
    assert sorted(r[0] for r in rows_rs(path)) == EXPECTED_IDS
    assert sorted(r[0] for r in rows_duckdb(duckdb_delta, path)) == EXPECTED_IDS
    assert [r[0] for r in delta_spark.rows(path, order_by="id", columns="id")] == EXPECTED_IDS


def test_drop_deletion_vectors_truncating_history_waits_for_the_retention(spark, tmp_path, duckdb_delta):
    """With ``truncate_history``: the first run purges and asks to wait; a run
    before the wait is refused, naming the versions that still use vectors;
    after it, the history before the purge is gone and the protocol downgraded."""
    path = _dv_table(spark, tmp_path, "t")
    truncating = {"drop_feature": {"name": "deletionVectors", "truncate_history": True}}
    with pytest.raises(InvalidInputError, match=r"partly done.*Wait 24 hours.*truncate_history"):
        run_alter(spark, path, truncating)
    assert "deletionVectors" in _features(path)
    purged = DeltaTable(path).snapshot().version
    with pytest.raises(InvalidInputError, match=r"versions 0 to \d+ of the history still uses it. Wait until"):
        run_alter(spark, path, truncating)
    assert "deletionVectors" in _features(path)
    _age_log(Path(path), 2)
    run_alter(spark, path, truncating)
    assert "deletionVectors" not in _features(path) and "checkpointProtection" not in _features(path)
    commits = [f.version for f in DeltaTable(path).log_store.list_from(0) if f.kind == "commit"]
    assert min(commits) >= purged  # the history that used vectors is gone
    assert sorted(r[0] for r in rows_rs(path)) == EXPECTED_IDS
    assert sorted(r[0] for r in rows_duckdb(duckdb_delta, path)) == EXPECTED_IDS


def test_drop_type_widening_rewrites_narrow_files_and_removes_the_type_changes(
    spark, tmp_path, duckdb_delta, delta_spark
):
    """delta-spark's ``TypeWideningPreDowngradeCommand``: the files written
    before ``i`` and ``d`` widened are rewritten in the wide types, the
    ``delta.typeChanges`` metadata goes, then the downgrade."""
    src = tmp_path / "narrow"
    src.mkdir()
    narrow = pa.table({"id": pa.array([1, 2], pa.int64()), "i": pa.array([1, 2], pa.int32()),
                       "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2)])})  # fmt: skip
    pq.write_table(narrow, src / "0.parquet")
    wide_src = tmp_path / "wide"
    wide_src.mkdir()
    wide = pa.table({"id": pa.array([3], pa.int64()), "i": pa.array([2**40], pa.int64()),
                     "d": pa.array([dt.datetime(2024, 1, 3, 4, 5)], pa.timestamp("us"))})  # fmt: skip
    pq.write_table(wide, wide_src / "0.parquet")
    path = str(tmp_path / "t")
    run_append(spark, path, str(src), "parquet", table_properties={"delta.enableTypeWidening": "true"})
    run_append(spark, path, str(wide_src), "parquet", merge_schema=True)
    assert all_changes(DeltaTable(path).snapshot().schema)
    before = state(path)
    with pytest.raises(InvalidInputError, match=r"dropping typeWidening rewrites 1 data file\(s\).*needs Spark"):
        run_alter(None, path, {"drop_feature": {"name": "typeWidening"}})
    assert state(path) == before
    run_alter(spark, path, {"drop_feature": {"name": "typeWidening"}})
    snap = DeltaTable(path).snapshot()
    assert "typeWidening" not in _features(path) and not all_changes(snap.schema)
    assert "delta.enableTypeWidening" not in snap.configuration
    for f in snap.files:
        schema = pq.read_schema(Path(path) / decode_path(f.path))
        assert schema.field("i").type == pa.int64() and pa.types.is_timestamp(schema.field("d").type)
    expected = [(1, 1), (2, 2), (3, 2**40)]
    assert sorted((r[2], r[1]) for r in rows_rs(path)) == expected  # columns by name: d, i, id
    assert sorted((r[2], r[1]) for r in rows_duckdb(duckdb_delta, path)) == expected
    assert delta_spark.rows(path, order_by="id", columns="id, i") == expected
