"""V2 checkpoints (reader+writer feature ``v2Checkpoint``): written by the
core, read back by the core, by delta-rs (``deltalake``) and by
delta-kernel-rs (DuckDB), also from the checkpoint alone; the protocol
upgrade ``delta.checkpointPolicy=v2`` makes; damaged or missing sidecars;
log cleanup and VACUUM with sidecars present.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.checkpoint.v2 import write_v2_checkpoint
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import CorruptSidecarError, InvalidInputError
from airflow_delta_provider.delta.log.store import checkpoint_name, commit_name
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import protocol_for
from airflow_delta_provider.operations.vacuum.plan import list_table, plan_vacuum
from tests.delta.checkpoint.test_writer import make_history

DAY = 86_400_000
SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
V2 = {"delta.checkpointPolicy": "v2"}
LAYOUTS = [
    pytest.param("parquet", 50_000, id="parquet-sidecars"),
    pytest.param("json", 50_000, id="json-sidecars"),
    pytest.param("parquet", 0, id="parquet-inline"),
    pytest.param("json", 0, id="json-inline"),
]


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def table(tmp_path, new_table, data_file):
    """A partitioned V2-checkpoint table at version 4: two live files (real
    parquet), one unexpired tombstone, one expired, and a ``txn``."""
    return make_history(tmp_path / "t", new_table, data_file, V2)


def log_dir(table: DeltaTable) -> str:
    return os.path.join(table.root, "_delta_log")


def sidecar_dir(table: DeltaTable) -> str:
    return os.path.join(log_dir(table), "_sidecars")


def only_checkpoint_left(table: DeltaTable, version: int) -> None:
    """Delete every commit at or below ``version``: readers must use its checkpoint."""
    for v in range(version + 1):
        os.unlink(os.path.join(log_dir(table), commit_name(v)))


def state(snap) -> tuple:
    """What a snapshot holds, comparably."""
    return (
        snap.version,
        snap.protocol,
        snap.metadata,
        sorted((f.path, json.dumps(f.partition_values), f.size, f.num_records) for f in snap.files),
        sorted((r.path, r.deletion_timestamp) for r in snap.tombstones),
        snap.txns,
        snap.size_in_bytes,
    )


def rows_of_col(rows: pa.Table, column: str = "id") -> list:
    return sorted(rows.column(column).to_pylist())


# --- the protocol upgrade ---------------------------------------------------------


def _md(configuration: dict[str, str]) -> Metadata:
    return Metadata.new('{"type":"struct","fields":[]}', [], configuration, created_time=0)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (Protocol(1, 2), Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint"))),
        (
            Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants")),
            Protocol(
                3,
                7,
                ("deletionVectors", "v2Checkpoint"),
                ("appendOnly", "deletionVectors", "invariants", "v2Checkpoint"),
            ),
        ),
    ],
)
def test_checkpoint_policy_v2_upgrades_the_protocol_as_delta_spark_does(before, after):
    assert protocol_for(before, _md(V2)) == after
    assert protocol_for(after, _md(V2)) == after
    assert protocol_for(before, _md({"delta.checkpointPolicy": "classic"})) == before
    with pytest.raises(InvalidInputError, match=r"delta\.checkpointPolicy"):
        protocol_for(before, _md({"delta.checkpointPolicy": "v3"}))


def test_the_policy_property_is_checked_and_lowercased_when_set():
    from airflow_delta_provider.delta.table_properties import with_properties

    assert with_properties(_md({}), {"delta.checkpointPolicy": "V2"}).configuration == V2
    with pytest.raises(InvalidInputError, match=r"delta\.checkpointPolicy must be one of classic, v2"):
        with_properties(_md({}), {"delta.checkpointPolicy": "v3"})


def test_setting_the_policy_commits_the_upgrade_and_a_bad_value_commits_nothing(tmp_path, new_table):
    new_table(tmp_path, SCHEMA)
    table = DeltaTable(tmp_path)
    snap = table.snapshot()
    assert snap.protocol == Protocol(1, 2)
    bad = table.transaction("SET TBLPROPERTIES", {}, snap)
    bad.update_metadata(replace(snap.metadata, configuration={"delta.checkpointPolicy": "sometimes"}))
    with pytest.raises(InvalidInputError, match="classic or v2"):
        bad.commit()
    assert table.latest_version() == 0
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(replace(snap.metadata, configuration=V2))
    txn.commit()
    upgraded = table.snapshot().protocol
    assert (upgraded.min_reader_version, upgraded.min_writer_version) == (3, 7)
    assert upgraded.reader_features == ("v2Checkpoint",)
    assert upgraded.writer_features == ("appendOnly", "invariants", "v2Checkpoint")


# --- what is written ------------------------------------------------------------


def test_v2_checkpoint_layout(table):
    """A UUID-named top-level parquet with checkpointMetadata, the non-file
    actions and one sidecar action per sidecar; the file actions in the
    sidecars; ``_last_checkpoint`` with the v2Checkpoint object."""
    snap = table.snapshot()
    info = write_v2_checkpoint(table.log_store, snap, actions_per_sidecar=2)
    store_files = sorted(os.listdir(log_dir(table)))
    (top_name,) = [n for n in store_files if n.startswith(f"{snap.version:020d}.checkpoint.")]
    assert top_name.endswith(".parquet") and len(top_name.split(".")) == 4
    assert not os.path.exists(os.path.join(log_dir(table), checkpoint_name(snap.version)))

    top = pq.read_table(os.path.join(log_dir(table), top_name))
    assert top.column_names == [
        "txn",
        "add",
        "remove",
        "metaData",
        "protocol",
        "domainMetadata",
        "checkpointMetadata",
        "sidecar",
    ]

    def rows(t: pa.Table, name: str) -> list:
        col = t.column(name)
        return col.filter(pc.is_valid(col)).to_pylist()

    assert rows(top, "checkpointMetadata") == [{"version": snap.version, "tags": None}]
    assert rows(top, "add") == rows(top, "remove") == []
    assert [r["appId"] for r in rows(top, "txn")] == ["app"]
    assert rows(top, "protocol")[0]["readerFeatures"] == ["v2Checkpoint"]
    sidecars = rows(top, "sidecar")
    # 2 live files + 1 unexpired tombstone in sidecars of at most 2 rows.
    assert len(sidecars) == 2 and sorted(os.listdir(sidecar_dir(table))) == sorted(s["path"] for s in sidecars)
    adds, removes = [], []
    for s in sidecars:
        path = os.path.join(sidecar_dir(table), s["path"])
        assert s["sizeInBytes"] == os.path.getsize(path)
        assert s["modificationTime"] == os.stat(path).st_mtime_ns // 1_000_000
        side = pq.read_table(path)
        assert side.column_names == ["add", "remove"] and side.num_rows <= 2
        adds += rows(side, "add")
        removes += rows(side, "remove")
    assert sorted(a["path"] for a in adds) == sorted(f.path for f in snap.files)
    assert {a["dataChange"] for a in adds} == {r["dataChange"] for r in removes} == {False}
    assert all(a["deletionVector"] is None for a in adds)  # null struct, not a struct of nulls
    assert [r["path"] for r in removes] == [r.path for r in snap.tombstones]

    pointer = info["v2Checkpoint"]
    assert pointer["path"] == top_name and pointer["sizeInBytes"] == os.path.getsize(
        os.path.join(log_dir(table), top_name)
    )
    assert [s["path"] for s in pointer["sidecarFiles"]] == [s["path"] for s in sidecars]
    assert pointer["nonFileActions"][-1] == {"checkpointMetadata": {"version": snap.version}}
    assert [next(iter(a)) for a in pointer["nonFileActions"]] == ["protocol", "metaData", "txn", "checkpointMetadata"]
    assert info["size"] == top.num_rows + 3
    assert info["sizeInBytes"] == pointer["sizeInBytes"] + sum(s["sizeInBytes"] for s in sidecars)
    assert info["numOfAddFiles"] == snap.num_files == 2


def test_json_top_level_file(table):
    snap = table.snapshot()
    info = write_v2_checkpoint(table.log_store, snap, file_format="json")
    lines = [json.loads(line) for line in table.log_store.read(info["v2Checkpoint"]["path"]).splitlines()]
    assert [next(iter(line)) for line in lines] == ["checkpointMetadata", "sidecar", "protocol", "metaData", "txn"]
    assert lines[0] == {"checkpointMetadata": {"version": snap.version}}
    assert os.listdir(sidecar_dir(table)) == [lines[1]["sidecar"]["path"]]


def test_inline_v2_checkpoint_keeps_file_actions_in_the_top_level_file(table):
    snap = table.snapshot()
    info = write_v2_checkpoint(table.log_store, snap, actions_per_sidecar=0)
    assert not os.path.exists(sidecar_dir(table))
    top = pq.read_table(os.path.join(log_dir(table), info["v2Checkpoint"]["path"]))
    assert top.column("sidecar").null_count == top.num_rows
    assert top.column("add").drop_null().combine_chunks().field("path").to_pylist() == [f.path for f in snap.files]
    assert info["v2Checkpoint"]["sidecarFiles"] == [] and info["size"] == top.num_rows


def test_write_checkpoint_picks_the_spec_from_the_protocol(table, tmp_path, new_table):
    """A v2Checkpoint table gets a V2 checkpoint; any other table the classic file, as before."""
    info = write_checkpoint(table, table.snapshot())
    assert "v2Checkpoint" in info and os.listdir(sidecar_dir(table))
    assert json.loads(table.log_store.read("_last_checkpoint")) == info
    new_table(tmp_path / "plain", SCHEMA)
    plain = DeltaTable(tmp_path / "plain")
    info = write_checkpoint(plain, plain.snapshot())
    assert set(info) == {"version", "size", "sizeInBytes", "numOfAddFiles"}
    assert sorted(os.listdir(log_dir(plain))) == [
        "00000000000000000000.checkpoint.parquet",
        "00000000000000000000.crc",
        "00000000000000000000.json",
        "_last_checkpoint",
    ]


def test_the_auto_checkpoint_is_v2(tmp_path, new_table):
    new_table(tmp_path, SCHEMA, (), {**V2, "delta.checkpointInterval": "2"})
    table = DeltaTable(tmp_path)
    for _ in range(2):
        table.transaction("WRITE", {"mode": "Append"}, table.snapshot()).commit()
    hint = table.log_store.read_last_checkpoint()
    assert hint["version"] == 2 and hint["v2Checkpoint"]["path"].startswith("00000000000000000002.checkpoint.")
    snap = table.snapshot()
    assert snap.segment.checkpoint_files[0].kind == "v2checkpoint" and snap.segment.commits == ()


def test_an_empty_table_has_no_sidecar(tmp_path, new_table):
    new_table(tmp_path, SCHEMA, (), V2)
    table = DeltaTable(tmp_path)
    info = write_checkpoint(table, table.snapshot())
    assert info["v2Checkpoint"]["sidecarFiles"] == [] and info["numOfAddFiles"] == 0
    only_checkpoint_left(table, 0)
    assert table.snapshot().num_files == 0


# --- reading it back ----------------------------------------------------------------


@pytest.mark.parametrize(("file_format", "per_sidecar"), LAYOUTS)
def test_round_trip_from_the_checkpoint_alone(table, snapshot_rows, file_format, per_sidecar):
    before = table.snapshot()
    write_v2_checkpoint(table.log_store, before, file_format=file_format, actions_per_sidecar=per_sidecar or 0)
    only_checkpoint_left(table, before.version)
    after = DeltaTable(table.root).snapshot()
    assert after.segment.checkpoint_files[0].kind == "v2checkpoint" and after.segment.commits == ()
    assert state(after) == state(before)
    assert rows_of_col(snapshot_rows(after)) == rows_of_col(snapshot_rows(before)) == [2, 3, 12, 13]


@pytest.mark.parametrize(("file_format", "per_sidecar"), LAYOUTS)
def test_deltalake_and_duckdb_read_our_v2_checkpoint(table, snapshot_rows, duckdb_delta, file_format, per_sidecar):
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    snap = table.snapshot()
    write_checkpoint(table, snap)  # _last_checkpoint, as the writer leaves it
    if (file_format, per_sidecar) != ("parquet", 50_000):  # the default layout; others replace it
        info = write_v2_checkpoint(table.log_store, snap, file_format=file_format, actions_per_sidecar=per_sidecar)
        for name in os.listdir(log_dir(table)):
            if name.startswith(f"{snap.version:020d}.checkpoint.") and name != info["v2Checkpoint"]["path"]:
                os.unlink(os.path.join(log_dir(table), name))
        table.log_store.write_last_checkpoint(info)
    only_checkpoint_left(table, snap.version)
    rs = RsTable(table.root)
    assert rs.version() == snap.version
    assert sorted(rs.get_add_actions(flatten=True).column("path").to_pylist()) == sorted(f.path for f in snap.files)
    assert rs.transaction_version("app") == snap.txn_version("app")
    by_rs = pa.table(QueryBuilder().register("t", rs).execute("SELECT * FROM t").read_all())
    by_duckdb = duckdb_delta.execute(f"SELECT * FROM delta_scan('{table.root}')").fetch_arrow_table()
    ours = snapshot_rows(DeltaTable(table.root).snapshot())
    assert rows_of_col(by_rs) == rows_of_col(by_duckdb) == rows_of_col(ours) == [2, 3, 12, 13]
    assert rows_of_col(by_duckdb, "p") == rows_of_col(ours, "p")


@pytest.mark.parametrize("name", ["v2-checkpoint-json", "v2-checkpoint-parquet"])
def test_a_last_checkpoint_with_v2_fields_is_followed(golden_dir, name):
    """delta-spark's ``_last_checkpoint`` (``v2Checkpoint`` object, checksum):
    the listing starts at its version, since its UUID-named checkpoint is there."""
    from airflow_delta_provider.delta.log.segment import list_for_version

    store = DeltaTable(golden_dir / name).log_store
    hint = store.read_last_checkpoint()
    assert hint["v2Checkpoint"]["path"].endswith(name.rsplit("-", 1)[1])
    files = list_for_version(store, None)
    assert min(f.version for f in files) == hint["version"] == 2
    assert hint["v2Checkpoint"]["path"] in [f.name for f in files]


def test_a_classic_named_v2_checkpoint_is_read_with_its_sidecars(table):
    """The protocol's compat checkpoint: V2 content under the classic name."""
    before = table.snapshot()
    info = write_v2_checkpoint(table.log_store, before)
    top = os.path.join(log_dir(table), info["v2Checkpoint"]["path"])
    os.replace(top, os.path.join(log_dir(table), checkpoint_name(before.version)))
    only_checkpoint_left(table, before.version)
    after = DeltaTable(table.root).snapshot()
    assert [f.name for f in after.segment.checkpoint_files] == [checkpoint_name(before.version)]
    assert state(after) == state(before)


def test_of_several_checkpoints_at_a_version_one_is_used_and_a_torn_one_is_passed_over(table, caplog):
    before = table.snapshot()
    write_checkpoint(table, before)  # V2: the table lists the feature
    names = [write_v2_checkpoint(table.log_store, before)["v2Checkpoint"]["path"] for _ in range(2)]
    only_checkpoint_left(table, before.version)
    chosen = DeltaTable(table.root).snapshot()
    tops = sorted(n for n in os.listdir(log_dir(table)) if n.startswith(f"{before.version:020d}.checkpoint."))
    assert len(tops) == 3 and set(names) < set(tops)
    assert chosen.segment.checkpoint_files[0].name == tops[-1]  # the greatest name, as delta-spark
    # Its sidecar lost: the next one at that version is read instead, with a warning.
    lost = _sidecars_of(table, tops[-1])
    os.unlink(os.path.join(sidecar_dir(table), lost[0]))
    fallback = DeltaTable(table.root).snapshot()
    assert fallback.segment.checkpoint_files[0].name == tops[-2]
    assert state(fallback) == state(before)
    assert lost[0] in caplog.text


def _sidecars_of(table: DeltaTable, top_name: str) -> list[str]:
    top = pq.read_table(os.path.join(log_dir(table), top_name), columns=["sidecar"]).column("sidecar")
    return [s["path"] for s in top.drop_null().to_pylist()]


# --- damaged sidecars --------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated"])
def test_a_damaged_sidecar_is_a_typed_error_naming_it(table, damage):
    snap = table.snapshot()
    info = write_checkpoint(table, snap)
    only_checkpoint_left(table, snap.version)
    (sidecar,) = info["v2Checkpoint"]["sidecarFiles"]
    path = os.path.join(sidecar_dir(table), sidecar["path"])
    if damage == "missing":
        os.unlink(path)
    elif damage == "garbage":
        with open(path, "wb") as f:
            f.write(b"not parquet at all")
    else:
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
    with pytest.raises(CorruptSidecarError) as err:
        DeltaTable(table.root).snapshot()
    assert sidecar["path"] in str(err.value) and info["v2Checkpoint"]["path"] in str(err.value)


def test_a_sidecar_outside_the_sidecar_folder_is_refused(table):
    snap = table.snapshot()
    info = write_v2_checkpoint(table.log_store, snap, file_format="json")
    name = info["v2Checkpoint"]["path"]
    text = table.log_store.read(name).decode().replace('"path":"', '"path":"../../', 1)
    table.log_store.write_atomic(name, text.encode())
    only_checkpoint_left(table, snap.version)
    with pytest.raises(CorruptSidecarError, match="not in _delta_log/_sidecars"):
        DeltaTable(table.root).snapshot()


def test_a_lost_sidecar_with_the_commits_still_there_falls_back_to_them(table):
    snap = table.snapshot()
    info = write_checkpoint(table, snap)
    os.unlink(os.path.join(sidecar_dir(table), info["v2Checkpoint"]["sidecarFiles"][0]["path"]))
    again = DeltaTable(table.root).snapshot()
    assert again.segment.checkpoint_files == () and state(again) == state(snap)


# --- log cleanup and VACUUM --------------------------------------------------------


def _age(path: str, days: float) -> None:
    t = time.time() - days * 86_400
    os.utime(path, (t, t))


def test_log_cleanup_keeps_referenced_sidecars_and_deletes_expired_unreferenced_ones(tmp_path, new_table):
    from airflow_delta_provider.delta.actions.model import AddFile

    new_table(tmp_path, SCHEMA, (), {**V2, "delta.checkpointInterval": "3", "delta.enableExpiredLogCleanup": "false"})
    table = DeltaTable(tmp_path)
    for v in range(1, 9):  # versions 1..8, each adding a file; V2 checkpoints at 3 and 6
        txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
        txn.add(AddFile(f"f{v}.parquet", {}, 1, 1))
        txn.commit()
    tops = {v: [n for n in os.listdir(log_dir(table)) if n.startswith(f"{v:020d}.checkpoint.")] for v in (3, 6)}
    sidecars = {v: _sidecars_of(table, name) for v, (name,) in tops.items()}
    assert sidecars[3] and sidecars[6] and set(os.listdir(sidecar_dir(table))) == {*sidecars[3], *sidecars[6]}
    for name in ("orphan-old.parquet", "orphan-young.parquet"):  # e.g. left by a writer that died
        with open(os.path.join(sidecar_dir(table), name), "wb") as f:
            f.write(b"x")
    for name in os.listdir(log_dir(table)):
        if name[:20].isdigit() and int(name[:20]) <= 7:
            _age(os.path.join(log_dir(table), name), 40)
    for name in os.listdir(sidecar_dir(table)):
        if name != "orphan-young.parquet":
            _age(os.path.join(sidecar_dir(table), name), 40)

    deleted = cleanup_expired_logs(table, table.snapshot())
    # Commits 0..5 and checkpoint 3 go (6 is the newest checkpoint at or below
    # the last expired commit); then checkpoint 3's sidecars and the expired
    # orphan. Checkpoint 6's sidecars are as old, but referenced: they stay,
    # and so does the young orphan, which may belong to a checkpoint being written.
    assert set(os.listdir(sidecar_dir(table))) == {*sidecars[6], "orphan-young.parquet"}
    assert deleted == 2 * 6 + 1 + len(sidecars[3]) + 1  # commits 0..5 with their .crc
    for version in (6, 7, 8):  # every retained version still reads, for us and for delta-rs
        assert table.snapshot(version=version).num_files == version
        from deltalake import DeltaTable as RsTable

        assert len(RsTable(str(tmp_path), version=version).file_uris()) == version


def test_log_cleanup_deletes_no_sidecar_while_no_checkpoint_goes(tmp_path, new_table):
    from airflow_delta_provider.delta.actions.model import AddFile

    new_table(tmp_path, SCHEMA, (), {**V2, "delta.checkpointInterval": "3", "delta.enableExpiredLogCleanup": "false"})
    table = DeltaTable(tmp_path)
    for v in range(1, 5):
        txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
        txn.add(AddFile(f"f{v}.parquet", {}, 1, 1))
        txn.commit()
    with open(os.path.join(sidecar_dir(table), "orphan.parquet"), "wb") as f:
        f.write(b"x")
    for folder in (log_dir(table), sidecar_dir(table)):
        for name in os.listdir(folder):
            if os.path.isfile(os.path.join(folder, name)):
                _age(os.path.join(folder, name), 40)
    assert cleanup_expired_logs(table, table.snapshot()) == 6  # commits 0..2 and their .crc, below checkpoint 3
    assert "orphan.parquet" in os.listdir(sidecar_dir(table))  # as delta-spark: swept when a checkpoint goes


def test_vacuum_never_touches_the_log_or_its_sidecars(table):
    write_checkpoint(table, table.snapshot())
    before = {n: os.path.getsize(os.path.join(sidecar_dir(table), n)) for n in os.listdir(sidecar_dir(table))}
    for name in before:
        _age(os.path.join(sidecar_dir(table), name), 400)
    with open(os.path.join(sidecar_dir(table), "unreferenced.parquet"), "wb") as f:
        f.write(b"x")
    _age(os.path.join(sidecar_dir(table), "unreferenced.parquet"), 400)
    snap = table.snapshot()
    listing = list_table(table.storage, snap.partition_columns)
    assert not any(e.path.startswith("_delta_log/") for e in listing)
    plan = plan_vacuum(
        table_root=table.root,
        listing=listing,
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=snap.partition_columns,
        now_ms=now_ms() + 400 * DAY,
        retention_ms=0,
    )
    assert plan.files  # the removed data files go ...
    assert not any(e.path.startswith("_delta_log") for e in plan.files)  # ... nothing of the log
    assert not any(d.startswith("_delta_log") for d in plan.dirs)
    assert table.storage.delete_many([e.path for e in plan.files]) == len(plan.files)
    assert {n for n in os.listdir(sidecar_dir(table)) if n in before} == set(before)
    assert os.path.exists(os.path.join(sidecar_dir(table), "unreferenced.parquet"))
    assert state(DeltaTable(table.root).snapshot()) == state(snap)
