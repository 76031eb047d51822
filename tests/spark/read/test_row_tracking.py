"""Row tracking through the Spark engine (``spark/row_tracking.py`` and the
commands): ``_metadata.row_id`` and ``_metadata.row_commit_version`` are read
as delta-spark defines them, and UPDATE, DELETE (copy-on-write and with
deletion vectors), OPTIMIZE, REORG PURGE and MERGE keep the stable ids of the rows they
copy, in both I/O modes and under column mapping; new rows get fresh ids."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import row_tracking
from airflow_delta_provider.spark.read.scan import scan
from tests.operations.runs import run_append, run_delete, run_merge, run_optimize, run_reorg_purge, run_update
from tests.spark.arrow_support import arrow_workers  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("arrow_workers")
ON = {"delta.enableRowTracking": "true"}


def source(tmp_path, name: str, ids: range) -> str:
    path = str(tmp_path / f"{name}.parquet")
    pq.write_table(pa.table({"id": pa.array(list(ids), pa.int64()), "val": pa.array([i * 10 for i in ids])}), path)
    return path


def tracked(spark, path: str, io: str) -> dict[int, tuple[int, int]]:
    """{id: (row_id, row_commit_version)} of the table's rows, through scan(row_tracking=True)."""
    df = scan(spark, DeltaTable(path).snapshot(), io=io, row_tracking=True)
    rows = df.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
    out = {r["id"]: (r["row_id"], r["row_commit_version"]) for r in rows}
    assert len(out) == len(rows)
    return out


def high_water_mark(path: str) -> int:
    return row_tracking.high_water_mark(DeltaTable(path).snapshot().domain_metadata)


def make(spark, tmp_path, io: str, properties=ON) -> str:
    path = str(tmp_path / "t")
    v0 = run_append(spark, path, source(tmp_path, "a", range(0, 10)), "parquet", io=io, table_properties=properties)
    v1 = run_append(spark, path, source(tmp_path, "b", range(10, 20)), "parquet", io=io)
    assert (v0.version, v1.version) == (0, 1)
    return path


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
@pytest.mark.parametrize("mapping", [None, "name", "id"], ids=["plain", "name-mapping", "id-mapping"])
def test_update_delete_optimize_keep_row_ids_and_new_rows_get_fresh_ones(spark, tmp_path, duckdb_delta, io, mapping):
    properties = {**ON, "delta.columnMapping.mode": mapping} if mapping else ON
    path = make(spark, tmp_path, io, properties)
    snap = DeltaTable(path).snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(snap.protocol.writer_features)
    before = tracked(spark, path, io)
    assert sorted(r for r, _ in before.values()) == list(range(20))  # fresh ids: 0..19
    assert {v for _, v in before.values()} == {0, 1}
    assert high_water_mark(path) == 19

    upd = run_update(spark, path, "id < 3 OR id = 15", {"val": "val + 1"}, io=io)
    after_update = tracked(spark, path, io)
    assert {i: r for i, (r, _) in after_update.items()} == {i: r for i, (r, _) in before.items()}
    for i, (_, version) in after_update.items():
        changed = i < 3 or i == 15
        assert version == (upd.version if changed else before[i][1]), i
    assert high_water_mark(path) > 19  # the rewritten files took fresh ranges

    dele = run_delete(spark, path, "id % 4 = 1", io=io)
    assert dele.version == upd.version + 1
    after_delete = tracked(spark, path, io)
    assert set(after_delete) == {i for i in range(20) if i % 4 != 1}
    assert all(after_delete[i] == after_update[i] for i in after_delete)  # ids and versions kept

    mark = high_water_mark(path)
    added = run_append(spark, path, source(tmp_path, "c", range(100, 105)), "parquet", io=io)
    after_append = tracked(spark, path, io)
    fresh = sorted(after_append[i][0] for i in range(100, 105))
    assert fresh == list(range(mark + 1, mark + 6))
    assert {after_append[i][1] for i in range(100, 105)} == {added.version}
    assert all(after_append[i] == after_delete[i] for i in after_delete)

    opt = run_optimize(spark, path, io=io)
    assert opt.version is not None and len(DeltaTable(path).snapshot().files) == 1
    assert tracked(spark, path, io) == after_append  # compaction moves rows, never their ids

    ids = [r for r, _ in after_append.values()]
    assert len(ids) == len(set(ids))
    # delta-kernel-rs (DuckDB) reads the same rows, the materialized columns hidden.
    got = duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()
    assert got.column_names == ["id", "val"] and sorted(got.column("id").to_pylist()) == sorted(after_append)


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_deletion_vectors_keep_row_ids(spark, tmp_path, io):
    path = make(spark, tmp_path, io, {**ON, "delta.enableDeletionVectors": "true"})
    before = tracked(spark, path, io)
    run_delete(spark, path, "id = 4", io=io)  # marks the row: the file keeps its baseRowId
    after_delete = tracked(spark, path, io)
    assert after_delete == {i: v for i, v in before.items() if i != 4}
    upd = run_update(spark, path, "id = 7", {"val": "-1"}, io=io)  # a vector, and the new row in a new file
    after = tracked(spark, path, io)
    assert after[7] == (before[7][0], upd.version)
    assert all(after[i] == after_delete[i] for i in after if i != 7)
    purge = run_reorg_purge(spark, path, io=io)  # rewrites the marked files without their deleted rows
    assert purge.version is not None
    assert all(f.deletion_vector is None for f in DeltaTable(path).snapshot().files)
    assert tracked(spark, path, io) == after


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_merge_keeps_ids_of_matched_rows_and_gives_inserts_fresh_ones(spark, tmp_path, io):
    path = make(spark, tmp_path, io)
    before = tracked(spark, path, io)
    mark = high_water_mark(path)
    src = source(tmp_path, "m", range(18, 23))
    result = run_merge(
        spark,
        path,
        src,
        "t.id = s.id",
        [
            {"when": "matched", "update": {"val": "s.val + 1"}},
            {"when": "not_matched", "insert": "*"},
        ],
        io=io,
    )
    after = tracked(spark, path, io)
    for i in range(18):
        assert after[i] == before[i], i  # copied rows: id and version
    for i in (18, 19):
        assert after[i] == (before[i][0], result.version)  # updated rows: id kept, version new
    inserted = sorted(after[i][0] for i in (20, 21, 22))
    assert inserted[0] > mark and len(set(inserted)) == 3
    ids = [r for r, _ in after.values()]
    assert len(ids) == len(set(ids))


def test_reading_row_tracking_needs_it_enabled(spark, tmp_path):
    path = make(spark, tmp_path, "hadoop", {})
    with pytest.raises(InvalidInputError, match="row tracking"):
        scan(spark, DeltaTable(path).snapshot(), row_tracking=True)


def test_enabling_on_an_existing_table_backfills_and_keeps_ids_from_then_on(spark, tmp_path):
    path = make(spark, tmp_path, "hadoop", {})
    assert all(f.base_row_id is None for f in DeltaTable(path).snapshot().files)
    result = run_append(spark, path, source(tmp_path, "c", range(20, 25)), "parquet", table_properties=ON)
    snap = DeltaTable(path).snapshot()
    assert all(f.base_row_id is not None for f in snap.files)
    before = tracked(spark, path, "hadoop")
    assert sorted(r for r, _ in before.values()) == list(range(25))
    assert {v for _, v in before.values()} == {result.version}
    run_update(spark, path, "id = 3", {"val": "0"})
    assert tracked(spark, path, "hadoop")[3][0] == before[3][0]


def test_a_spark_append_to_the_golden_writer_seven_table(spark, tmp_path, golden_dir):
    """log-replay-latest-metadata-protocol: writer 7 listing only appendOnly and invariants."""
    path = str(tmp_path / "golden")
    shutil.copytree(golden_dir / "log-replay-latest-metadata-protocol", path)
    src = str(tmp_path / "g.parquet")
    pq.write_table(pa.table({"col1": pa.array([7], pa.int64()), "col2": pa.array([8], pa.int64())}), src)
    before = DeltaTable(path).snapshot()
    result = run_append(spark, path, src, "parquet")
    assert result.version == before.version + 1
    from deltalake import DeltaTable as RsTable

    rows = RsTable(path).to_pyarrow_table().to_pylist()
    assert {"col1": 7, "col2": 8} in rows


def test_an_update_retried_after_a_concurrent_append_moves_its_fresh_ids_and_keeps_stable_ones(spark, tmp_path):
    """A real append slipped in between the UPDATE's rewrite and its commit:
    the retry gives the rewritten file ids above the append's mark and the
    retry's version, while the rows' stable ids stay."""
    from airflow_delta_provider.operations.update.spark import UpdateCommand

    path = str(tmp_path / "t")
    src = str(tmp_path / "p.parquet")
    parts = ["a"] * 5 + ["b"] * 5
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()), "part": parts}), src)
    run_append(spark, path, src, "parquet", partition_by=["part"], table_properties=ON)
    before = tracked(spark, path, "hadoop")
    command = UpdateCommand(spark, path, "part = 'a' AND id < 2", {"id": "id + 100"}, None, "hadoop")
    command.prepare()
    command.rewrite()
    other = str(tmp_path / "q.parquet")
    pq.write_table(pa.table({"id": pa.array([50, 51], pa.int64()), "part": ["b", "b"]}), other)
    winner = run_append(spark, path, other, "parquet")  # into a partition the UPDATE did not read
    winner_mark = high_water_mark(path)
    result = command.commit()
    assert (winner.version, result.version) == (1, 2)
    snap = DeltaTable(path).snapshot()
    rewritten = [f for f in snap.files if f.default_row_commit_version == result.version]
    assert len(rewritten) == 1 and rewritten[0].base_row_id == winner_mark + 1
    assert high_water_mark(path) == winner_mark + rewritten[0].num_records
    after = tracked(spark, path, "hadoop")
    assert after[100] == (before[0][0], result.version) and after[101] == (before[1][0], result.version)
    assert all(after[i] == before[i] for i in range(2, 10))
    ids = [r for r, _ in after.values()]
    assert len(ids) == len(set(ids)) == 12


def test_restore_brings_back_the_rows_ids_and_versions_and_the_mark_never_falls(spark, tmp_path):
    """PROTOCOL.md: a restored row gets its stable row id and row commit version back."""
    from tests.operations.runs import run_restore

    path = make(spark, tmp_path, "hadoop")
    before = tracked(spark, path, "hadoop")
    run_update(spark, path, "id < 12", {"val": "0"})
    run_delete(spark, path, "id > 15")
    mark = high_water_mark(path)
    restored = run_restore(spark, path, version=1)
    assert tracked(spark, path, "hadoop") == before
    assert high_water_mark(path) == mark  # re-added files keep their ids: nothing fresh, no lower mark
    added = run_append(spark, path, source(tmp_path, "c", range(30, 32)), "parquet")
    after = tracked(spark, path, "hadoop")
    assert sorted(after[i] for i in (30, 31)) == [(mark + 1, added.version), (mark + 2, added.version)]
    assert restored.version + 1 == added.version


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_row_tracking_and_the_change_data_feed_together(spark, tmp_path, io):
    """UPDATE, DELETE and MERGE keep stable ids and record their changes, the
    change files without the materialized columns."""
    from airflow_delta_provider.spark.read.table_changes import read_changes

    path = make(spark, tmp_path, io, {**ON, "delta.enableChangeDataFeed": "true"})
    before = tracked(spark, path, io)
    upd = run_update(spark, path, "id < 3", {"val": "-1"}, io=io)
    run_delete(spark, path, "id = 5", io=io)
    merged = run_merge(
        spark,
        path,
        source(tmp_path, "m", range(18, 22)),
        "t.id = s.id",
        [{"when": "matched", "update": {"val": "s.val + 1"}}, {"when": "not_matched", "insert": "*"}],
        io=io,
    )
    after = tracked(spark, path, io)
    assert after[0] == (before[0][0], upd.version) and after[18] == (before[18][0], merged.version)
    assert all(after[i] == before[i] for i in range(3, 18) if i != 5)
    changes = read_changes(spark, path, upd.version).frame
    assert not any(c.startswith("_row-") for c in changes.columns)
    kinds = sorted(r["_change_type"] for r in changes.select("_change_type").collect())
    assert kinds.count("update_preimage") == 5 and kinds.count("delete") == 1 and kinds.count("insert") == 2


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_a_replace_where_keeps_the_ids_of_the_rows_it_copies_and_gives_new_rows_fresh_ones(spark, tmp_path, io):
    path = make(spark, tmp_path, io)  # ids 0-9 at version 0, 10-19 at version 1
    before = tracked(spark, path, io)
    mark = high_water_mark(path)
    reload = source(tmp_path, "reload", range(15, 18))
    result = run_append(spark, path, reload, "parquet", io=io, mode="overwrite", replace_where="id >= 15 AND id < 18")
    after = tracked(spark, path, io)

    assert sorted(after) == list(range(20))
    kept = [i for i in range(20) if not 15 <= i < 18]
    assert {i: after[i] for i in kept} == {i: before[i] for i in kept}  # copied rows keep id and version
    fresh = [after[i] for i in (15, 16, 17)]
    assert all(row_id > mark and version == result.version for row_id, version in fresh)
    assert len({row_id for row_id, _ in after.values()}) == 20
