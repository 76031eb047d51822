"""The core's storage-dependent behaviour, on every backend: the local
filesystem, S3 (moto's server) and Azure (Azurite).

Each test runs once per backend with the backend's credentials in the
environment, as a user's would be (the core reads each cloud's own chain),
and checks what it reads against ``deltalake`` reading the same endpoint.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import (
    ConcurrentDeleteDeleteError,
    TableNotFoundError,
    VersionNotFoundError,
)
from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.vacuum.plan import list_table, plan_vacuum

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
DAY_MS = 86_400_000


@pytest.fixture
def backend(storage_backend, monkeypatch):
    """The backend, its credentials in the environment."""
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend


def rows(data_file, uri, ids, p="a"):
    return data_file(uri, pa.table({"id": pa.array(ids, pa.int64())}), {"p": p}, {"p": "string"})


def append(table: DeltaTable, add, token=None):
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(add)
    return txn.commit(metrics={"numFiles": 1}, token=token)


def history_with_a_delete(new_table, data_file, uri: str) -> DeltaTable:
    """v0 [1, 2] (p=a) / v1 +[3] (p=b) / v2 [1, 2] removed."""
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1, 2])])
    table = DeltaTable(uri)
    append(table, rows(data_file, uri, [3], "b"))
    snapshot = table.snapshot()
    first = next(f for f in snapshot.files if f.partition_values == {"p": "a"})
    txn = table.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snapshot)
    txn.add(first.remove(int(time.time() * 1000)))
    txn.commit(metrics={"numDeletedRows": 2})
    return table


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_snapshots_and_time_travel_match_deltalake(backend, new_table, data_file, snapshot_rows, deltalake_rows):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1, 2])])
    table = DeltaTable(uri)
    append(table, rows(data_file, uri, [3], "b"))
    time.sleep(1.1)  # object stores stamp files to the second: whole seconds on both sides
    between = int(time.time() * 1000)
    time.sleep(1.1)
    append(table, rows(data_file, uri, [4, 5], "b"))

    assert table.latest_version() == 2
    assert table.root == uri
    for version, expected in [(0, [1, 2]), (1, [1, 2, 3]), (2, [1, 2, 3, 4, 5])]:
        snap = table.snapshot(version=version)
        assert ids_of(snapshot_rows(snap)) == expected
        assert ids_of(deltalake_rows(uri, version, backend.storage_options)) == expected
    assert table.snapshot(timestamp=between).version == 1
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=3)


def test_checkpoint_and_last_checkpoint(backend, new_table, data_file, snapshot_rows, deltalake_rows):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1])])
    table = DeltaTable(uri)
    for i in range(2, 5):
        append(table, rows(data_file, uri, [i]))
    info = write_checkpoint(table, table.snapshot())
    assert info["version"] == 3 and info["numOfAddFiles"] == 4
    assert table.log_store.read_last_checkpoint() == info
    append(table, rows(data_file, uri, [5]))
    snap = DeltaTable(uri).snapshot()
    assert (snap.segment.checkpoint_version, [c.version for c in snap.segment.commits]) == (3, [4])
    assert ids_of(snapshot_rows(snap)) == [1, 2, 3, 4, 5]
    assert ids_of(deltalake_rows(uri, None, backend.storage_options)) == [1, 2, 3, 4, 5]


def test_log_cleanup_keeps_every_version_from_the_newest_safe_checkpoint(backend, new_table, data_file):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], {"delta.enableExpiredLogCleanup": "false"}, adds=[rows(data_file, uri, [0])])
    table = DeltaTable(uri)
    for i in range(1, 8):
        append(table, rows(data_file, uri, [i]))
        if i == 5:
            write_checkpoint(table, table.snapshot())
    later = int(time.time() * 1000) + 31 * DAY_MS  # past the 30-day default log retention
    deleted = cleanup_expired_logs(table, table.snapshot(), now_ms=later)
    assert deleted == 10  # commits 0-4 and their .crc; checkpoint 5 and everything after it stay
    assert [f.version for f in table.log_store.list_from(0) if f.kind == "commit"] == [5, 6, 7]
    assert table.snapshot(version=5).num_files == 6
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=4)


def test_v2_checkpoint_sidecars_are_written_read_and_cleaned_up(backend, new_table, data_file, snapshot_rows):
    """A V2 checkpoint (UUID-named file, sidecars in ``_delta_log/_sidecars``)
    goes through the storage seam: written, read by us and by deltalake,
    and its sidecars swept with it by log cleanup while the newer one's stay."""
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    from airflow_delta_provider.delta.log.checkpoint_reader import sidecar_references

    uri = backend.uri("t")
    configuration = {"delta.checkpointPolicy": "v2", "delta.enableExpiredLogCleanup": "false"}
    new_table(uri, SCHEMA, ["p"], configuration, adds=[rows(data_file, uri, [0])])
    table = DeltaTable(uri)
    for i in range(1, 6):
        append(table, rows(data_file, uri, [i]))
        if i in (2, 4):
            write_checkpoint(table, table.snapshot())
    snap = DeltaTable(uri).snapshot()
    (top,) = snap.segment.checkpoint_files
    assert (top.kind, top.version, [c.version for c in snap.segment.commits]) == ("v2checkpoint", 4, [5])
    assert ids_of(snapshot_rows(snap)) == [0, 1, 2, 3, 4, 5]
    rs = RsTable(uri, storage_options=backend.storage_options)
    assert ids_of(pa.table(QueryBuilder().register("t", rs).execute("SELECT * FROM t").read_all())) == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]

    kept = {s.name for s in sidecar_references(table.log_store, top)}
    assert kept and len(table.log_store.list_sidecars()) == 2
    later = int(time.time() * 1000) + 31 * DAY_MS
    assert (
        cleanup_expired_logs(table, table.snapshot(), now_ms=later) == 2 * 4 + 1 + 1
    )  # commits 0-3 and .crc, checkpoint 2, its sidecar
    assert {m.name for m in table.log_store.list_sidecars()} == kept
    assert ids_of(snapshot_rows(DeltaTable(uri).snapshot(version=4))) == [0, 1, 2, 3, 4]


def test_txn_versions_survive_replay_and_checkpoints(backend, new_table, data_file):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"])
    table = DeltaTable(uri)
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.set_txn("loader", 7)
    txn.add(rows(data_file, uri, [1]))
    txn.commit(metrics={}, token=None)
    assert table.snapshot().txn_version("loader") == 7
    write_checkpoint(table, table.snapshot())
    assert DeltaTable(uri).snapshot().txn_version("loader") == 7


def test_conflicting_removes_one_wins_and_the_log_stays_contiguous(backend, new_table, data_file):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1])])
    table = DeltaTable(uri)
    snap = table.snapshot()
    target = snap.files[0]
    txns = []
    for _ in range(2):
        txn = table.transaction("DELETE", parameters={}, snapshot=snap)
        txn.read_files([target])
        txn.add(target.remove(int(time.time() * 1000)))
        txns.append(txn)
    assert txns[0].commit(metrics={}, token=None).version == 1
    with pytest.raises(ConcurrentDeleteDeleteError):
        txns[1].commit(metrics={}, token=None)
    assert [f.version for f in table.log_store.list_from(0) if f.kind == "commit"] == [0, 1]
    # A blind append racing another lands after it.
    stale = table.snapshot()
    append(table, rows(data_file, uri, [2]))
    late = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=stale)
    late.add(rows(data_file, uri, [3]))
    assert late.commit(metrics={}, token=None).version == 3


def test_version_probe_sync_and_async(backend, new_table, data_file):
    uri = backend.uri("t")
    probe = VersionProbe(uri)
    assert probe.latest() is None and not probe.table_exists()
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1])])
    table = DeltaTable(uri)
    for i in range(2, 6):
        append(table, rows(data_file, uri, [i]))
    write_checkpoint(table, table.snapshot())
    append(table, rows(data_file, uri, [6]))

    assert probe.latest() == 5
    assert probe.newer_than(2) == 5 and probe.newer_than(5) is None
    assert probe.checkpoint_hint() == 4
    assert probe.info(5).operation == "WRITE"

    async def ask():
        return (
            await probe.latest_async(),
            await probe.newer_than_async(2),
            await probe.newer_than_async(5),
            await probe.has_async(3),
            await probe.first_present_async(0, 5),
            (await probe.info_async(5)).operation,
        )

    assert asyncio.run(ask()) == (5, 5, None, True, 0, "WRITE")


def test_missing_table_is_table_not_found(backend):
    with pytest.raises(TableNotFoundError):
        DeltaTable(backend.uri("nothing-here")).snapshot()


def test_vacuum_plan_from_a_listing_by_prefix(backend, new_table, data_file):
    uri = backend.uri("t")
    keep = rows(data_file, uri, [1])
    gone = rows(data_file, uri, [2], "b")
    new_table(uri, SCHEMA, ["p"], adds=[keep, gone])
    table = DeltaTable(uri)
    txn = table.transaction("DELETE", parameters={}, snapshot=table.snapshot())
    txn.add(gone.remove(int(time.time() * 1000)))
    txn.commit(metrics={}, token=None)
    orphan = rows(data_file, uri, [9], "c")  # written, never committed

    storage = table.storage
    listing = list_table(storage, ["p"])
    paths = {e.path for e in listing if not e.is_dir}
    assert not any(p.startswith("_delta_log") for p in paths)
    snap = table.snapshot()
    later = int(time.time() * 1000) + 8 * DAY_MS  # past the 7-day tombstone retention
    plan = plan_vacuum(
        table_root=table.root,
        listing=listing,
        adds=snap.files,
        tombstones=snap.all_tombstones,
        partition_columns=["p"],
        now_ms=later,
        retention_ms=7 * DAY_MS,
    )
    planned = sorted(e.path for e in plan.files)
    assert planned == sorted([gone.path, orphan.path])
    assert storage.delete_many(planned) == 2
    assert not storage.exists(orphan.path) and storage.exists(keep.path)
    assert {e.path for e in list_table(storage, ["p"]) if not e.is_dir} == {keep.path}


def test_absolute_paths_from_other_writers_are_resolved(backend, new_table, data_file, snapshot_rows):
    """An ``add`` may name its file by an absolute URI, in Spark's spelling
    (``s3a://``, ``file:``); it is the same file as its relative name."""
    from dataclasses import replace

    from airflow_delta_provider.delta.storage import parse_location

    uri = backend.uri("t")
    relative = rows(data_file, uri, [1])
    location = parse_location(uri)
    absolute_uri = (
        location.spark_uri()
        if backend.name == "s3"
        else ("file:" + location.path if location.is_local else location.uri)
    )
    absolute = replace(relative, path=f"{absolute_uri}/{relative.path}")
    new_table(uri, SCHEMA, ["p"], adds=[absolute])
    table = DeltaTable(uri)
    snap = table.snapshot()
    assert ids_of(snapshot_rows(snap)) == [1]
    assert snap.file_path(snap.files[0]) == location.child(relative.path)
    # A remove by the relative name cancels the absolute add.
    txn = table.transaction("DELETE", parameters={}, snapshot=snap)
    txn.add(relative.remove(int(time.time() * 1000)))
    txn.commit(metrics={}, token=None)
    assert table.snapshot().num_files == 0
