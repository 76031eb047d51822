"""VACUUM planning (delta/vacuum.py): the pure rules, then a property over
random table histories built with the core and pyarrow-written files."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import AddFile, DeletionVector, RemoveFile
from airflow_delta_provider.delta.errors import InvalidInputError, RetentionTooShortError
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.storage.hidden_paths import STAGING_PREFIX, is_hidden_name
from airflow_delta_provider.operations.vacuum.plan import (
    ListedEntry,
    absolute_path,
    check_retention,
    list_table,
    plan_vacuum,
    relative_path,
)
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

HOUR = 3_600_000
WEEK = 7 * 24 * HOUR
NOW = int(time.time() * 1000)  # real time: the core expires tombstones by the clock
OLD = NOW - WEEK - HOUR
YOUNG = NOW - HOUR


def add(path: str) -> AddFile:
    return AddFile(path=path, partition_values={}, size=1, modification_time=OLD)


def tomb(path: str, ts: int) -> RemoveFile:
    return RemoveFile(path=path, deletion_timestamp=ts)


def f(path: str, mtime: int = OLD, size: int = 10) -> ListedEntry:
    return ListedEntry(path, size, mtime, False)


def d(path: str, mtime: int = OLD) -> ListedEntry:
    return ListedEntry(path, 0, mtime, True)


def plan(listing, adds=(), tombstones=(), partition_columns=(), retention=WEEK, root="/t"):
    return plan_vacuum(
        table_root=root,
        listing=listing,
        adds=adds,
        tombstones=tombstones,
        partition_columns=partition_columns,
        now_ms=NOW,
        retention_ms=retention,
    )


# --- retention ----------------------------------------------------------------


def test_retention_defaults_to_table_setting():
    assert check_retention(None, WEEK) == WEEK


def test_retention_longer_than_table_is_accepted():
    assert check_retention(200, WEEK) == 200 * HOUR


def test_retention_shorter_than_table_is_refused_unless_check_off():
    with pytest.raises(RetentionTooShortError, match="168 hours"):
        check_retention(1, WEEK)
    assert check_retention(0, WEEK, enforce=False) == 0


def test_negative_retention_is_always_refused():
    with pytest.raises(RetentionTooShortError, match="must not be negative"):
        VacuumSpec(table_path="t", retention_hours=-1, retention_check=False)
    with pytest.raises(RetentionTooShortError):
        plan([], retention=-1)


# --- names and paths ----------------------------------------------------------


@pytest.mark.parametrize(
    "name, hidden",
    [
        ("_delta_log", True),
        ("_tmp", True),
        (".hidden", True),
        ("_change_data", False),
        ("_delta_index", False),
        ("_p=1", False),  # partition folder of column "_p"
        ("_q=1", True),  # not a partition column
        ("part-0.parquet", False),
        ("p=1", False),
    ],
)
def test_hidden_names(name, hidden):
    assert is_hidden_name(name, ["_p", "p"]) is hidden


@pytest.mark.parametrize(
    "log_path, rel",
    [
        ("part-0.parquet", "part-0.parquet"),
        ("p=a%20b/part-0.parquet", "p=a b/part-0.parquet"),
        ("p=a%253Ab/x.parquet", "p=a%3Ab/x.parquet"),
        ("file:/t/x.parquet", "x.parquet"),
        ("file:///t/sub/x.parquet", "sub/x.parquet"),
        ("/t/x.parquet", "x.parquet"),
        ("file:/other/x.parquet", None),
        ("/tt/x.parquet", None),
        ("../x.parquet", None),
    ],
)
def test_relative_path(log_path, rel):
    assert relative_path(log_path, "/t") == rel


def test_relative_path_on_object_store_root():
    assert relative_path("s3://bucket/t/x.parquet", "s3://bucket/t") == "x.parquet"
    assert relative_path("s3a://bucket/t/a%3Db/x.parquet", "s3://bucket/t") == "a=b/x.parquet"
    assert relative_path("s3://bucket/u/x.parquet", "s3://bucket/t") is None
    assert relative_path("s3://other/t/x.parquet", "s3://bucket/t") is None
    assert relative_path("x%20y.parquet", "s3://bucket/t") == "x y.parquet"


def test_absolute_path_refuses_escapes_and_the_log():
    assert absolute_path("/t", "a/b.parquet") == "/t/a/b.parquet"
    for bad in ("../x", "/etc/passwd", "_delta_log/00000000000000000000.json", "a/../../x"):
        with pytest.raises(InvalidInputError, match="not a data path under the table root"):
            absolute_path("/t", bad)


# --- planning -----------------------------------------------------------------


def test_old_orphans_go_live_files_and_young_files_stay():
    listing = [f("live.parquet"), f("orphan.parquet"), f("young.parquet", YOUNG)]
    p = plan(listing, adds=[add("live.parquet")])
    assert [e.path for e in p.files] == ["orphan.parquet"]
    assert p.size_in_bytes == 10
    assert p.delete_before_ms == NOW - WEEK


def test_tombstones_within_retention_are_kept():
    listing = [f("recent.parquet"), f("expired.parquet")]
    p = plan(listing, tombstones=[tomb("recent.parquet", YOUNG), tomb("expired.parquet", OLD)])
    assert [e.path for e in p.files] == ["expired.parquet"]


def test_hidden_entries_and_the_log_are_never_planned():
    listing = [
        d("_delta_log"),
        f("_delta_log/00000000000000000000.json"),
        f("_delta_log/00000000000000000000.checkpoint.parquet"),
        f(".part-0.parquet.crc"),
        d("_tmp"),
        f("_tmp/x.parquet"),
        d("_change_data"),
        f("_change_data/cdc-0.parquet"),
        d("p=1"),
        d("p=1/.staging"),
        f("p=1/.staging/x"),
        f("p=1/orphan.parquet"),
    ]
    p = plan(listing, partition_columns=["p"])
    assert sorted(e.path for e in p.files) == ["_change_data/cdc-0.parquet", "p=1/orphan.parquet"]
    # _change_data empties; p=1 keeps its hidden .staging folder
    assert p.dirs == ["_change_data"]


def test_paths_outside_the_root_are_dropped():
    listing = [f("../escape.parquet"), f("/abs.parquet"), f("a/../../up.parquet"), f("ok.parquet")]
    assert [e.path for e in plan(listing).files] == ["ok.parquet"]


def test_live_add_with_absolute_path_inside_root_is_kept():
    listing = [f("abs.parquet"), f("p=x y/enc.parquet")]
    p = plan(listing, adds=[add("file:/t/abs.parquet"), add("p=x%20y/enc.parquet")])
    assert p.files == []


def test_empty_folders_go_deepest_first_but_not_folders_of_kept_files():
    listing = [
        d("a"),
        d("a/b"),
        f("a/b/old.parquet"),
        d("keep"),
        f("keep/live.parquet"),
        d("fresh", YOUNG),
        d("young"),
        f("young/y.parquet", YOUNG),
        d("emptyold"),
    ]
    p = plan(listing, adds=[add("keep/live.parquet")])
    assert [e.path for e in p.files] == ["a/b/old.parquet"]
    assert p.dirs == ["a/b", "a", "emptyold"]


# --- deletion vector files -------------------------------------------------------

#: A ``u`` descriptor's path: a random prefix ("ab") and a Z85 UUID (PROTOCOL.md example 1).
DV_PREFIXED = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, offset=4)
DV_PREFIXED_FILE = "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
DV_ROOT = DeletionVector("u", "^jP?.<zvDfIGb{C.FPij", 38, 3, offset=1)
DV_ROOT_FILE = "deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin"


def dv_add(path: str, dv: DeletionVector) -> AddFile:
    return AddFile(path=path, partition_values={}, size=1, modification_time=OLD, deletion_vector=dv)


def test_dv_files_of_live_adds_are_kept_and_unreferenced_old_ones_go():
    listing = [
        f("a.parquet"),
        f(DV_ROOT_FILE),
        d("ab"),
        f(DV_PREFIXED_FILE),
        f("deletion_vector_00000000-0000-0000-0000-000000000000.bin"),  # old, referenced by nothing
        f("deletion_vector_11111111-1111-1111-1111-111111111111.bin", YOUNG),  # young: a write in progress
        d("cd"),
        f("cd/deletion_vector_22222222-2222-2222-2222-222222222222.bin"),  # a prefix folder nothing needs
    ]
    p = plan(listing, adds=[dv_add("a.parquet", DV_ROOT), dv_add("b.parquet", DV_PREFIXED)])
    assert [e.path for e in p.files] == [
        "cd/deletion_vector_22222222-2222-2222-2222-222222222222.bin",
        "deletion_vector_00000000-0000-0000-0000-000000000000.bin",
    ]
    assert p.dirs == ["cd"]  # "ab" holds a live vector


def test_dv_files_of_retained_tombstones_are_kept_and_of_expired_ones_go():
    kept = tomb("a.parquet", YOUNG)
    kept.deletion_vector = DV_ROOT
    expired = tomb("b.parquet", OLD)
    expired.deletion_vector = DV_PREFIXED
    listing = [f(DV_ROOT_FILE), d("ab"), f(DV_PREFIXED_FILE)]
    p = plan(listing, tombstones=[kept, expired])
    assert [e.path for e in p.files] == [DV_PREFIXED_FILE]
    assert p.dirs == ["ab"]


def test_absolute_path_dv_under_the_root_is_kept_and_inline_dvs_name_no_file():
    absolute = DeletionVector("p", "file:/t/sub/deletion_vector_x.bin", 34, 1, offset=1)
    inline = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    outside = DeletionVector("p", "s3://elsewhere/deletion_vector_y.bin", 34, 1, offset=1)
    listing = [d("sub"), f("sub/deletion_vector_x.bin"), f("deletion_vector_z.bin")]
    p = plan(listing, adds=[dv_add("a.parquet", absolute), dv_add("b.parquet", inline), dv_add("c.parquet", outside)])
    assert [e.path for e in p.files] == ["deletion_vector_z.bin"]
    assert p.dirs == []


def test_dv_paths_on_an_object_store_root():
    listing = [f(DV_ROOT_FILE), d("ab"), f(DV_PREFIXED_FILE), f("deletion_vector_old.bin")]
    p = plan(listing, adds=[dv_add("a.parquet", DV_ROOT), dv_add("b.parquet", DV_PREFIXED)], root="s3://bkt/t")
    assert [e.path for e in p.files] == ["deletion_vector_old.bin"]


def test_vacuum_of_a_golden_dv_table_keeps_every_live_row(tmp_path, golden_dir, snapshot_rows, duckdb_delta):
    """dv-partitioned-with-checkpoint with every file aged past the retention:
    the vectors of the live files stay (rows unchanged, as DuckDB reads them),
    those only expired tombstones named go."""
    import shutil

    from airflow_delta_provider.delta.actions.deletion_vectors import relative_dv_path
    from airflow_delta_provider.delta.table import DeltaTable

    root = tmp_path / "t"
    shutil.copytree(golden_dir / "dv-partitioned-with-checkpoint", root)
    for path in root.rglob("*"):
        os.utime(path, ((OLD - WEEK) / 1000, (OLD - WEEK) / 1000))
    table = DeltaTable(root)
    snap = table.snapshot()
    before = snapshot_rows(snap)
    storage = open_storage(str(root))
    p = plan_vacuum(
        table_root=snap.table_root,
        listing=list_table(storage, snap.partition_columns),
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=snap.partition_columns,
        now_ms=NOW,
        retention_ms=WEEK,
    )
    live_dvs = {relative_dv_path(a.deletion_vector) for a in snap.files if a.deletion_vector}
    on_disk_dvs = {p.name for p in root.glob("deletion_vector_*.bin")}
    planned = {e.path for e in p.files}
    assert live_dvs and not planned & live_dvs
    assert planned & on_disk_dvs == on_disk_dvs - live_dvs != set()  # the golden tombstones expired long ago
    storage.delete_many(sorted(planned))

    after = DeltaTable(root).snapshot()
    got = snapshot_rows(after)
    assert got.num_rows == before.num_rows == after.num_records
    expected = duckdb_delta.execute(f"SELECT * FROM delta_scan('{root}')").fetch_arrow_table()
    assert got.num_rows == expected.num_rows
    assert sorted(got.column("col1").to_pylist()) == sorted(expected.column("col1").to_pylist())


def test_list_table_does_not_descend_into_hidden_folders(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000000.json").write_text("{}")
    (tmp_path / "p=1").mkdir()
    (tmp_path / "p=1" / "a.parquet").write_bytes(b"123")
    (tmp_path / "p=1" / ".tmp").mkdir()
    (tmp_path / "p=1" / ".tmp" / "inner").write_bytes(b"")
    local = sorted((e.path, e.size, e.is_dir) for e in list_table(open_storage(str(tmp_path)), ["p"]))
    assert local == [("_delta_log", 0, True), ("p=1", 0, True), ("p=1/.tmp", 0, True), ("p=1/a.parquet", 3, False)]


# --- abandoned staging folders --------------------------------------------------

STAGE = f"{STAGING_PREFIX}0b7c4e1a-0000-4000-8000-000000000000"


def staging_listing(mtime: int = OLD, young: str | None = None) -> list[ListedEntry]:
    """What a driver killed mid-write leaves: Spark's files and _temporary tree."""
    entries = [
        d(STAGE),
        f(f"{STAGE}/part-00000-x.snappy.parquet"),
        f(f"{STAGE}/.part-00000-x.snappy.parquet.crc"),
        f(f"{STAGE}/_SUCCESS", size=0),
        d(f"{STAGE}/_temporary"),
        d(f"{STAGE}/_temporary/0"),
        f(f"{STAGE}/_temporary/0/part-00001-x.snappy.parquet"),
        d(f"{STAGE}/_temporary/0/_temporary"),  # empty
    ]
    return [ListedEntry(e.path, e.size, YOUNG if e.path == young else mtime, e.is_dir) for e in entries]


def test_old_staging_folder_is_planned_whole():
    p = plan([*staging_listing(), f("live.parquet")], adds=[add("live.parquet")])
    assert [e.path for e in p.files] == sorted(
        [
            f"{STAGE}/.part-00000-x.snappy.parquet.crc",
            f"{STAGE}/_SUCCESS",
            f"{STAGE}/_temporary/0/part-00001-x.snappy.parquet",
            f"{STAGE}/part-00000-x.snappy.parquet",
        ]
    )
    # every folder after the folders inside it, the staging folder last
    assert p.dirs == [f"{STAGE}/_temporary/0/_temporary", f"{STAGE}/_temporary/0", f"{STAGE}/_temporary", STAGE]


@pytest.mark.parametrize(
    "young",
    [STAGE, f"{STAGE}/.part-00000-x.snappy.parquet.crc", f"{STAGE}/_temporary/0/_temporary"],
)
def test_staging_folder_with_a_young_entry_is_left_alone(young):
    p = plan(staging_listing(young=young))
    assert p.files == [] and p.dirs == []


def test_staging_folder_holding_a_referenced_file_is_left_alone():
    p = plan(staging_listing(), adds=[add(f"{STAGE}/part-00000-x.snappy.parquet")])
    assert p.files == [] and p.dirs == []


def test_staging_folder_is_reclaimed_only_at_the_root_and_other_hidden_names_stay():
    listing = [
        d("p=1"),
        d(f"p=1/{STAGE}"),
        f(f"p=1/{STAGE}/part-00000-x.snappy.parquet"),
        d("_delta_staging"),  # no trailing underscore: not the prefix
        f("_delta_staging/x.parquet"),
        d("_tmp"),
        f("_tmp/x.parquet"),
        d(".spark-staging-1"),
        f(".spark-staging-1/x.parquet"),
        f(f"{STAGING_PREFIX}file"),  # a file, not a folder
        f("p=1/orphan.parquet"),
    ]
    p = plan(listing, partition_columns=["p"])
    assert [e.path for e in p.files] == ["p=1/orphan.parquet"]
    assert p.dirs == []  # p=1 keeps its hidden staging-named folder


def test_list_table_lists_root_staging_folders_whole(tmp_path):
    stage = tmp_path / STAGE
    (stage / "_temporary" / "0" / ".hidden").mkdir(parents=True)
    (stage / "_temporary" / "0" / ".hidden" / "x").write_bytes(b"12")
    (stage / ".part-0.crc").write_bytes(b"1")
    (tmp_path / "p=1" / STAGE).mkdir(parents=True)
    (tmp_path / "p=1" / STAGE / "x.parquet").write_bytes(b"")
    (tmp_path / "_tmp").mkdir()
    (tmp_path / "_tmp" / "x").write_bytes(b"")
    local = sorted((e.path, e.size, e.is_dir) for e in list_table(open_storage(str(tmp_path)), ["p"]))
    assert local == [
        ("_delta_staging_0b7c4e1a-0000-4000-8000-000000000000", 0, True),
        (f"{STAGE}/.part-0.crc", 1, False),
        (f"{STAGE}/_temporary", 0, True),
        (f"{STAGE}/_temporary/0", 0, True),
        (f"{STAGE}/_temporary/0/.hidden", 0, True),
        (f"{STAGE}/_temporary/0/.hidden/x", 2, False),
        ("_tmp", 0, True),
        ("p=1", 0, True),
        (f"p=1/{STAGE}", 0, True),
    ]


# --- property: random histories built with the core ---------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def _core():
    table_mod = pytest.importorskip("airflow_delta_provider.delta.table")
    return table_mod


_STEP = st.sampled_from(["append", "append_part", "update", "delete", "checkpoint", "orphan"])


@hypothesis.settings(max_examples=15, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(
    steps=st.lists(st.tuples(_STEP, st.integers(0, 10_000)), min_size=1, max_size=12),
    ages_h=st.lists(st.integers(0, 400), min_size=40, max_size=40),
    retention_h=st.sampled_from([0, 1, 24, 168, 300]),
)
def test_vacuum_never_deletes_live_or_retained_files(tmp_path_factory, steps, ages_h, retention_h):
    """Over random histories, the plan never holds a live file, a file younger
    than the retention, a tombstone within the retention, or a hidden path."""
    table_mod = _core()
    from airflow_delta_provider.delta.actions.model import Metadata

    root = str(tmp_path_factory.mktemp("vac"))
    table = table_mod.DeltaTable(root)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    import json
    import uuid

    def write_file(part: str) -> AddFile:
        rel = f"p={part}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        full = os.path.join(root, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), full)
        st_ = os.stat(full)
        return AddFile(rel, {"p": part}, st_.st_size, st_.st_mtime_ns // 1_000_000, stats=json.dumps({"numRecords": 2}))

    txn = table.transaction("WRITE", parameters={"mode": "ErrorIfExists"}, snapshot=None)
    txn.update_metadata(Metadata.new(json.dumps(schema), ["p"], created_time=NOW))
    txn.add_all([write_file("a")])
    txn.commit(metrics={}, token=None)

    for step, seed in steps:
        snap = table.snapshot()
        part = "ab"[seed % 2]
        if step in ("append", "append_part"):
            t = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
            t.add_all([write_file(part if step == "append_part" else "a")])
            t.commit(metrics={}, token=None)
        elif step in ("update", "delete") and snap.files:
            victim = snap.files[seed % len(snap.files)]
            t = table.transaction(step.upper(), parameters={"predicate": "[]"}, snapshot=snap)
            t.read_files([victim])
            removes = [victim.remove(NOW - (seed % 400) * HOUR)]
            t.add_all(removes + ([write_file(part)] if step == "update" else []))
            t.commit(metrics={}, token=None)
        elif step == "checkpoint":
            from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

            write_checkpoint(table, table.snapshot())
        else:  # an orphan a failed writer left behind
            os.makedirs(os.path.join(root, f"p={part}"), exist_ok=True)
            with open(os.path.join(root, f"p={part}", f"orphan-{seed}.parquet"), "wb") as fh:
                fh.write(b"x")

    # Age every data file at random (os.utime), so the clock is ours.
    listing = list_table(open_storage(root), ["p"])
    for i, e in enumerate(e for e in listing if not e.is_dir and not e.path.startswith("_delta_log")):
        ts = (NOW - ages_h[i % len(ages_h)] * HOUR) / 1000
        os.utime(os.path.join(root, e.path), (ts, ts))
    listing = list_table(open_storage(root), ["p"])

    snap = table.snapshot()
    retention = retention_h * HOUR
    p = plan_vacuum(
        table_root=root,
        listing=listing,
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=snap.partition_columns,
        now_ms=NOW,
        retention_ms=retention,
    )
    planned = {e.path for e in p.files}
    live = {relative_path(a.path, root) for a in snap.files}
    kept_tombs = {
        relative_path(t.path, root) for t in snap.all_tombstones if (t.deletion_timestamp or 0) >= NOW - retention
    }
    mtimes = {e.path: e.mtime_ms for e in listing}
    assert not planned & live
    # ...and it is complete: every old, unreferenced data file is planned.
    expected = {
        e.path for e in listing if not e.is_dir and e.mtime_ms < NOW - retention and e.path not in live | kept_tombs
    }
    assert planned == expected
    assert not planned & kept_tombs
    assert all(mtimes[path] < NOW - retention for path in planned)
    assert not any(path.startswith("_delta_log") for path in planned | set(p.dirs))
    for dpath in p.dirs:
        assert not any(x.startswith(dpath + "/") for x in live | kept_tombs)
