"""Optimistic concurrency across OS processes.

Writers claim versions with an atomic put-if-absent of ``N.json``; losers
check the winning commits and retry. Blind appends never conflict, so every
append of every process must land exactly once, on a contiguous run of
versions. Two rewrites of the same file cannot both win: the loser gets
``ConcurrentDeleteDeleteError`` and leaves nothing behind.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG, AddFile
from airflow_delta_provider.delta.errors import (
    ConcurrentDeleteDeleteError,
    ConcurrentModificationError,
)
from airflow_delta_provider.delta.table import DeltaTable

PROCESSES = 4
APPENDS_PER_PROCESS = 25
SCHEMA = pa.schema([("writer", pa.int32()), ("seq", pa.int32())])


def _append_worker(root: str, writer: int, count: int, start: mp.synchronize.Event, out: mp.Queue) -> None:
    """One process: ``count`` blind appends of a one-row parquet file each,
    data and log through the core's storage (credentials from the environment)."""
    import time
    import uuid

    table = DeltaTable(root)
    start.wait(timeout=60)
    results = []
    for seq in range(count):
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table({"writer": [writer], "seq": [seq]}, schema=SCHEMA), buf)
        payload = buf.getvalue().to_pybytes()
        table.storage.put(name, payload)
        add = AddFile(
            path=name,
            partition_values={},
            size=len(payload),
            modification_time=int(time.time() * 1000),
            data_change=True,
            stats=json.dumps(
                {
                    "numRecords": 1,
                    "minValues": {"writer": writer, "seq": seq},
                    "maxValues": {"writer": writer, "seq": seq},
                    "nullCount": {"writer": 0, "seq": 0},
                }
            ),
        )
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
        txn.add(add)
        result = txn.commit(metrics={"numFiles": 1, "numOutputRows": 1}, token=f"w{writer}-{seq}")
        results.append((seq, result.version, name, result.attempts))
    out.put((writer, results))


def _commit_tokens(table: DeltaTable) -> dict[int, str]:
    """Version -> the operation token its commitInfo carries."""
    tokens = {}
    for f in table.log_store.list_from(0):
        if f.kind != "commit":
            continue
        for line in table.log_store.read(f.name).decode().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                tokens[f.version] = (action["commitInfo"].get("tags") or {}).get(TOKEN_TAG)
    return tokens


@pytest.fixture
def backend(storage_backend, monkeypatch):
    """The backend, its credentials in the environment (which spawned writers inherit)."""
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend


def test_blind_appends_from_many_processes_all_land_once(backend, new_table) -> None:
    root = backend.uri("table")
    new_table(root, SCHEMA)
    table = DeltaTable(root)

    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_append_worker, args=(str(root), w, APPENDS_PER_PROCESS, start, out))
        for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    start.set()
    reports = dict(out.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    total = PROCESSES * APPENDS_PER_PROCESS
    retried = sum(a - 1 for results in reports.values() for *_, a in results)
    print(f"{retried} lost races were retried")
    log_versions = [f.version for f in table.log_store.list_from(0) if f.kind == "commit"]
    assert log_versions == list(range(total + 1)), "versions must be contiguous"

    # Each process saw its commits in increasing versions, and no two commits
    # of any process share a version.
    committed = [v for results in reports.values() for _, v, _, _ in results]
    assert sorted(committed) == list(range(1, total + 1))
    for results in reports.values():
        versions = [v for _, v, _, _ in results]
        assert versions == sorted(versions)

    # Every token is in the log exactly once, at the version its writer was told.
    tokens = _commit_tokens(table)
    assert Counter(tokens.values()) == Counter({None: 1} | {f"w{w}-{s}": 1 for w in range(PROCESSES) for s in range(APPENDS_PER_PROCESS)})
    for writer, results in reports.items():
        for seq, version, _, _ in results:
            assert tokens[version] == f"w{writer}-{seq}"

    snap = DeltaTable(root).snapshot()
    assert snap.version == total
    assert sorted(a.path for a in snap.files) == sorted(name for r in reports.values() for _, _, name, _ in r)
    assert snap.num_records == total
    # Checkpoints every 10 versions were written along the way, by whichever writer won.
    assert table.log_store.exists(f"{(total // 10) * 10:020d}.checkpoint.parquet")

    deltalake = pytest.importorskip("deltalake")
    rs = deltalake.DeltaTable(root, storage_options=backend.storage_options or None)
    assert rs.version() == total
    assert len(rs.file_uris()) == total
    assert rs.to_pyarrow_table().num_rows == total
    leftovers = [m.name for m in table.storage.list_dir("_delta_log") if m.name.startswith(".") or m.name.endswith(".tmp")]
    assert leftovers == []


@pytest.fixture
def one_file_table(tmp_path: Path, new_table, data_file) -> Path:
    root = tmp_path / "table"
    add = data_file(root, pa.table({"writer": pa.array([1, 2], pa.int32()), "seq": pa.array([1, 2], pa.int32())}))
    new_table(root, SCHEMA, adds=[add])
    return root


def _rewrite(table: DeltaTable, snap, data_file, *, read: bool):
    """A rewrite of the table's one file (as UPDATE would): remove it, add a copy."""
    victim = snap.files[0]
    txn = table.transaction("UPDATE", parameters={"predicate": ["seq = 1"]}, snapshot=snap)
    if read:
        txn.read_files([victim])
    new = data_file(table.root, pq.read_table(snap.file_path(victim)))
    txn.add_all([victim.remove(snap.timestamp + 1), new])
    return txn


@pytest.mark.parametrize("read", [True, False], ids=["rewrite-read-files", "blind-remove"])
def test_two_rewrites_of_one_file_exactly_one_wins(one_file_table: Path, data_file, read: bool) -> None:
    table = DeltaTable(str(one_file_table))
    snap = table.snapshot()
    first = _rewrite(table, snap, data_file, read=read)
    second = _rewrite(table, snap, data_file, read=read)

    assert first.commit(metrics={"numUpdatedRows": 1}, token="first").version == 1
    log_before = sorted(os.listdir(one_file_table / "_delta_log"))
    with pytest.raises(ConcurrentDeleteDeleteError) as info:
        second.commit(metrics={"numUpdatedRows": 1}, token="second")
    assert isinstance(info.value, ConcurrentModificationError)
    assert info.value.winning_version == 1
    assert snap.files[0].path in str(info.value)

    # No trace: no new version, no temp files, no commit carrying the token.
    assert sorted(os.listdir(one_file_table / "_delta_log")) == log_before
    assert table.latest_version() == 1
    assert table.find_commit("second") is None
    assert table.find_commit("first")[0] == 1
    assert len(table.snapshot().files) == 1


def test_loser_of_a_race_retries_when_there_is_no_conflict(one_file_table: Path, data_file) -> None:
    """An append that read an old snapshot lands after a concurrent rewrite."""
    table = DeltaTable(str(one_file_table))
    snap = table.snapshot()
    rewrite = _rewrite(table, snap, data_file, read=True)
    append = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
    append.add(data_file(one_file_table, pa.table({"writer": pa.array([9], pa.int32()), "seq": pa.array([9], pa.int32())})))
    assert rewrite.commit(token="rewrite").version == 1
    result = append.commit(token="append")
    assert result.version == 2
    assert result.commit_info["readVersion"] == 0
    assert table.snapshot().num_records == 3
