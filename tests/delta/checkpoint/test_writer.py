"""Unit tests for ``delta/checkpoint.py``: the parquet checkpoint and ``_last_checkpoint``.

The schema and content rules of notes section 1 are checked on the parquet
file itself; delta-rs (``deltalake``) and delta-kernel-rs (DuckDB) then read a
table whose early commits are gone, so they can only have used our checkpoint.
"""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.store import checkpoint_name, commit_name
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta_logs import local_log_path

DAY = 86_400_000
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def now_ms() -> int:
    return int(time.time() * 1000)


def make_history(root, new_table, data_file, configuration: dict[str, str] | None = None) -> DeltaTable:
    """A partitioned table at version 4 under ``root``: four files added, one
    removed now, one removed 30 days ago, and a txn; real parquet data files."""
    root.mkdir()
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
    part = {"p": "string"}
    adds = [
        data_file(root, pa.table({"id": [i, i + 10], "s": [f"r{i}", None]}), {"p": v}, part)
        for i, v in enumerate("abca")
    ]
    new_table(root, schema, ["p"], configuration or {}, adds[:2])
    t = DeltaTable(root)
    for a in adds[2:]:
        txn = t.transaction("WRITE", {"mode": "Append"}, t.snapshot())
        txn.add(a)
        txn.set_txn("app", a.size)
        txn.commit()
    txn = t.transaction("DELETE", {}, t.snapshot())
    txn.add(adds[0].remove(now_ms()))
    txn.commit()
    # An old tombstone: its deletionTimestamp is past the 7-day retention.
    txn = t.transaction("DELETE", {}, t.snapshot())
    txn.add(adds[1].remove(now_ms() - 30 * DAY))
    txn.commit()
    return t


@pytest.fixture
def table(tmp_path, new_table, data_file):
    return make_history(tmp_path / "t", new_table, data_file)


def _leaf_fields(t: pa.DataType, prefix: str = ""):
    if pa.types.is_struct(t):
        for f in t:
            yield f"{prefix}{f.name}", f
            yield from _leaf_fields(f.type, f"{prefix}{f.name}.")
    elif pa.types.is_list(t):
        yield from _leaf_fields(t.value_type, prefix)
    elif pa.types.is_map(t):
        yield from _leaf_fields(t.item_type, prefix)


def test_checkpoint_schema_and_content(table):
    snap = table.snapshot()
    info = write_checkpoint(table, snap)
    path = local_log_path(table, checkpoint_name(snap.version))
    data = pq.read_table(path)

    # Every column, at every depth, is nullable; there is no commitInfo or cdc.
    assert set(data.column_names) == {"txn", "add", "remove", "metaData", "protocol", "domainMetadata"}
    for f in data.schema:
        assert f.nullable, f.name
        for name, child in _leaf_fields(f.type, f"{f.name}."):
            assert child.nullable, name
    add_type = data.schema.field("add").type
    assert add_type.get_field_index("deletionVector") >= 0
    assert add_type.field("stats").type == pa.string()

    adds = data.column("add").filter(pc.is_valid(data.column("add")))
    removes = data.column("remove").filter(pc.is_valid(data.column("remove")))
    # deletionVector is null at the struct level, not a struct of nulls.
    dv = pc.struct_field(adds, "deletionVector")
    assert dv.null_count == len(adds) == snap.num_files == 2
    # File actions are written with dataChange=false.
    assert pc.struct_field(adds, "dataChange").to_pylist() == [False, False]
    assert pc.struct_field(removes, "dataChange").to_pylist() == [False]
    # Only the unexpired tombstone is kept.
    assert [r.path for r in snap.tombstones] == pc.struct_field(removes, "path").to_pylist()
    assert sorted(pc.struct_field(adds, "path").to_pylist()) == sorted(f.path for f in snap.files)
    stats = [json.loads(s) for s in pc.struct_field(adds, "stats").to_pylist()]
    assert all(s["numRecords"] == 2 for s in stats)
    pvs = [dict(p) for p in pc.struct_field(adds, "partitionValues").to_pylist()]
    assert sorted(p["p"] for p in pvs) == ["a", "c"]

    def rows(name):
        col = data.column(name)
        return col.filter(pc.is_valid(col)).to_pylist()

    (proto,) = rows("protocol")
    assert (proto["minReaderVersion"], proto["minWriterVersion"]) == (1, 2)
    (md,) = rows("metaData")
    assert md["id"] == snap.metadata.id and md["partitionColumns"] == ["p"]
    assert json.loads(md["schemaString"]) == snap.schema
    assert [(t["appId"], t["version"]) for t in rows("txn")] == [("app", snap.txn_version("app"))]
    assert rows("domainMetadata") == []
    assert info["size"] == data.num_rows == 1 + 1 + 1 + 2 + 1


def test_last_checkpoint_has_exactly_version_size_bytes_and_add_count(table):
    snap = table.snapshot()
    info = write_checkpoint(table, snap)
    hint = json.loads(table.log_store.read("_last_checkpoint"))
    assert hint == info
    assert set(hint) == {"version", "size", "sizeInBytes", "numOfAddFiles"}
    assert hint["version"] == snap.version and hint["numOfAddFiles"] == snap.num_files
    assert hint["sizeInBytes"] == os.path.getsize(local_log_path(table, checkpoint_name(snap.version)))
    assert hint["size"] == pq.ParquetFile(local_log_path(table, checkpoint_name(snap.version))).metadata.num_rows


def test_checkpoint_replays_to_the_same_snapshot(table):
    before = table.snapshot()
    write_checkpoint(table, before)
    after = table.snapshot()
    assert after.segment.checkpoint_version == before.version and after.segment.commits == ()
    assert sorted(f.path for f in after.files) == sorted(f.path for f in before.files)
    assert {f.path: f.num_records for f in after.files} == {f.path: f.num_records for f in before.files}
    assert {f.path: f.partition_values for f in after.files} == {f.path: f.partition_values for f in before.files}
    assert [r.path for r in after.tombstones] == [r.path for r in before.tombstones]
    assert after.metadata == before.metadata and after.protocol == before.protocol
    assert after.txns == before.txns and after.size_in_bytes == before.size_in_bytes


def test_checkpoint_needs_its_commit(table):
    snap = table.snapshot()
    os.unlink(local_log_path(table, commit_name(snap.version)))
    with pytest.raises(InvalidInputError, match="commit is missing"):
        write_checkpoint(table, snap)
    assert not table.log_store.exists(checkpoint_name(snap.version))
    assert table.log_store.read_last_checkpoint() is None


def test_older_checkpoint_does_not_move_the_hint_back(table):
    write_checkpoint(table, table.snapshot())
    latest = table.latest_version()
    write_checkpoint(table, table.snapshot(version=2))
    assert table.log_store.exists(checkpoint_name(2))
    assert table.log_store.read_last_checkpoint()["version"] == latest


def test_checkpoint_of_an_empty_unpartitioned_table(tmp_path, new_table):
    new_table(tmp_path, ARROW_SCHEMA)
    t = DeltaTable(tmp_path)
    info = write_checkpoint(t, t.snapshot())
    assert (info["numOfAddFiles"], info["size"]) == (0, 2)
    assert t.snapshot().num_files == 0


def _only_checkpoint_left(table: DeltaTable) -> int:
    """Checkpoint the latest version and delete every commit at or below it,
    so a reader has to use the checkpoint."""
    snap = table.snapshot()
    write_checkpoint(table, snap)
    for v in range(snap.version):
        os.unlink(local_log_path(table, commit_name(v)))
    return snap.version


def test_checkpoint_is_read_by_deltalake(table, rows_of, snapshot_rows):
    from deltalake import DeltaTable as RsTable

    version = _only_checkpoint_left(table)
    rs = RsTable(table.root)
    ours = table.snapshot()
    assert rs.version() == version
    assert len(rs.file_uris()) == ours.num_files == 2
    assert rows_of(rs.to_pyarrow_table()) == rows_of(snapshot_rows(ours))
    assert rs.metadata().id == ours.metadata.id
    assert rs.transaction_version("app") == ours.txn_version("app")


def test_checkpoint_is_read_by_duckdb(table, duckdb_delta, rows_of, snapshot_rows):
    _only_checkpoint_left(table)
    got = duckdb_delta.execute(f"SELECT id, s, p FROM delta_scan('{table.root}')").arrow()
    if isinstance(got, pa.RecordBatchReader):
        got = got.read_all()
    assert got.num_rows == 4
    assert rows_of(got) == rows_of(snapshot_rows(table.snapshot()), ["id", "s", "p"])


def test_metadata_with_null_optional_fields_round_trips(tmp_path):
    root = tmp_path
    t = DeltaTable(root)
    txn = t.transaction("CREATE TABLE", {}, None)
    md = Metadata.new('{"type":"struct","fields":[]}', (), {"k": "v"}, created_time=5, name=None)
    txn.update_metadata(md)
    txn.add(AddFile("x.parquet", {}, 1, 1))
    txn.commit()
    write_checkpoint(t, t.snapshot())
    os.unlink(local_log_path(t, commit_name(0)))
    got = t.snapshot().metadata
    assert got == md


def test_checkpoint_carries_deletion_vectors_both_ways(tmp_path, golden_dir, snapshot_rows, duckdb_delta):
    """A checkpoint of a table with deletion vectors writes each file's
    ``deletionVector`` struct (null at the struct level where there is none),
    on adds and on tombstones; our replay, delta-rs and DuckDB then read the
    same vectors and rows from it alone."""
    import shutil

    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    root = tmp_path / "t"
    shutil.copytree(golden_dir / "dv-partitioned-with-checkpoint", root)
    table = DeltaTable(root)
    snap = table.snapshot()
    victim = next(a for a in snap.files if a.deletion_vector is not None)
    # A fresh tombstone of a file with a DV, so the checkpoint holds one (the golden ones expired).
    version = snap.version + 1
    with open(local_log_path(table, commit_name(version)), "w") as fh:
        fh.write(json.dumps({"remove": victim.remove(now_ms()).to_json()}) + "\n")
    snap = table.snapshot()
    assert snap.version == version and [t.deletion_vector for t in snap.tombstones] == [victim.deletion_vector]
    write_checkpoint(table, snap)
    for name in os.listdir(root / "_delta_log"):  # nothing but the new checkpoint (and its commit) to read
        if name[:20].isdigit() and int(name[:20]) < version:
            os.unlink(root / "_delta_log" / name)

    data = pq.read_table(local_log_path(table, checkpoint_name(version)))
    adds = data.column("add").filter(pc.is_valid(data.column("add")))
    written = dict(zip(pc.struct_field(adds, "path").to_pylist(), pc.struct_field(adds, "deletionVector").to_pylist()))
    with_dv = [a for a in snap.files if a.deletion_vector is not None]
    assert with_dv and len(with_dv) < len(snap.files)
    for a in snap.files:
        dv = written[a.path]
        if a.deletion_vector is None:
            assert dv is None  # a null struct, not a struct of nulls
        else:
            assert dv == {"maxRowIndex": None, "offset": None, **a.deletion_vector.to_json()}
    removes = data.column("remove").filter(pc.is_valid(data.column("remove")))
    assert pc.struct_field(removes, "deletionVector").to_pylist()[0]["pathOrInlineDv"] == (
        victim.deletion_vector.path_or_inline_dv
    )

    reread = DeltaTable(root).snapshot()
    assert [f.name for f in reread.segment.checkpoint_files] == [checkpoint_name(version)]
    assert sorted((a.path, a.deletion_vector) for a in reread.files) == sorted(
        (a.path, a.deletion_vector) for a in snap.files
    )
    assert [(t.path, t.deletion_vector) for t in reread.tombstones] == [(victim.path, victim.deletion_vector)]
    assert reread.num_records == snap.num_records

    got = snapshot_rows(reread)
    by_duckdb = duckdb_delta.execute(f"SELECT * FROM delta_scan('{root}')").fetch_arrow_table()
    by_rs = QueryBuilder().register("t", RsTable(str(root))).execute("SELECT * FROM t").read_all()
    assert got.num_rows == reread.num_records == by_duckdb.num_rows == pa.table(by_rs).num_rows
    assert sorted(got.column("col1").to_pylist()) == sorted(by_duckdb.column("col1").to_pylist())


# --- Stats in the checkpoint, as the table properties ask (issue 44) --------------------------------------


def _checkpoint_adds(t: DeltaTable) -> tuple[pa.DataType, list[dict]]:
    snap = t.snapshot()
    write_checkpoint(t, snap)
    data = pq.read_table(local_log_path(t, checkpoint_name(snap.version)))
    return data.schema.field("add").type, [a for a in data.column("add").to_pylist() if a is not None]


@pytest.mark.parametrize("as_json", ["true", "false"])
def test_write_stats_as_struct_holds_typed_stats_and_partition_values(
    tmp_path, new_table, data_file, as_json, rows_of, snapshot_rows
):
    config = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": as_json}
    t = make_history(tmp_path / "t", new_table, data_file, config)
    add_type, adds = _checkpoint_adds(t)
    names = [f.name for f in add_type]
    assert names[-2:] == ["partitionValues_parsed", "stats_parsed"]  # delta-spark's order
    assert ("stats" in names) == (as_json == "true")
    stats_type = add_type.field("stats_parsed").type
    assert [f.name for f in stats_type] == ["numRecords", "minValues", "maxValues", "nullCount"]
    assert stats_type.field("minValues").type == pa.struct([("id", pa.int64()), ("s", pa.string())])
    by_path = {f.path: f.parsed_stats() for f in t.snapshot().files}
    for a in adds:
        stats = by_path[a["path"]]
        parsed = a["stats_parsed"]
        assert parsed["numRecords"] == stats["numRecords"]
        assert parsed["minValues"] == {k: stats["minValues"].get(k) for k in ("id", "s")}
        assert parsed["nullCount"] == stats["nullCount"]
        assert a["partitionValues_parsed"] == {"p": a["partitionValues"][0][1]}
    # The struct-only checkpoint replays to the same state, and delta-rs reads it.
    fresh = DeltaTable(t.root).snapshot()
    assert fresh.num_records == t.snapshot().num_records
    assert sorted(fresh.files_matching("id = 13"), key=lambda f: f.path) != []
    from deltalake import DeltaTable as RsTable

    assert rows_of(RsTable(str(t.root)).to_pyarrow_table()) == rows_of(snapshot_rows(fresh))


def test_stats_as_json_only_by_default(table):
    add_type, _adds = _checkpoint_adds(table)
    names = [f.name for f in add_type]
    assert "stats" in names and "stats_parsed" not in names and "partitionValues_parsed" not in names


def test_set_transaction_retention_drops_old_txns(tmp_path, new_table, data_file):
    t = make_history(tmp_path / "t", new_table, data_file, {"delta.setTransactionRetentionDuration": "interval 1 days"})
    assert t.snapshot().txn_version("app") is not None  # updated just now
    t2 = make_history(
        tmp_path / "t2", new_table, data_file, {"delta.setTransactionRetentionDuration": "interval 0 seconds"}
    )
    snap = t2.snapshot()
    assert snap.txn_version("app") is None and snap.txn_actions == []
    write_checkpoint(t2, snap)
    data = pq.read_table(local_log_path(t2, checkpoint_name(snap.version)))
    assert data.column("txn").drop_null().to_pylist() == []
    assert snap.checksum().set_transactions is None
