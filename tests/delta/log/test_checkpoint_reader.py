"""Reading a checkpoint (delta/log/checkpoint_reader.py) on an object store:
each parquet file (classic checkpoint, or V2 top-level file and sidecars) is
fetched once, though its footer, its small actions and, later, its file
actions are read at three different times; the state read is the same as
from a local disk."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.checkpoint.v2 import write_v2_checkpoint
from airflow_delta_provider.delta.table import DeltaTable
from tests.storage_servers import upload_tree

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def build(path: str, v2: bool) -> DeltaTable:
    """12 versions: a checkpoint at 10 (classic, or V2 with sidecars), then a
    commit replacing a file (a tombstone)."""
    now = int(time.time() * 1000)
    table = DeltaTable(path)
    txn = table.transaction("CREATE TABLE", snapshot=None)
    txn.update_metadata(Metadata.new(SCHEMA, [], {}, created_time=now))
    txn.add(AddFile("f-0.parquet", {}, 10, now, True))
    txn.commit()
    for i in range(1, 12):
        snap = table.snapshot()
        txn = table.transaction("WRITE", snapshot=snap)
        if i == 11:
            txn.add(snap.files[0].remove(now))
        txn.add(AddFile(f"f-{i}.parquet", {}, 10 + i, now, True))
        txn.commit()
    if v2:
        write_v2_checkpoint(table.log_store, table.snapshot(10), actions_per_sidecar=4)
    return table


def state(snap) -> tuple:
    return (
        snap.version,
        sorted((f.path, f.size) for f in snap.files),
        sorted(r.path for r in snap.all_tombstones),
        snap.metadata.schema_string,
    )


@pytest.mark.parametrize("v2", [False, True], ids=["classic", "v2-sidecars"])
def test_each_checkpoint_file_is_fetched_once_on_s3(stoppable_s3, tmp_path, v2):
    local = build(str(tmp_path / "t"), v2)
    uri = stoppable_s3.uri("t")
    upload_tree(tmp_path / "t", uri, stoppable_s3.storage_options)
    requests = stoppable_s3.proxy.requests
    requests.clear()
    snap = DeltaTable(uri, stoppable_s3.storage_options).snapshot()
    assert snap.segment.checkpoint_version == 10
    parquet_gets = Counter(p for m, p in requests if m == "GET" and p.endswith(".parquet"))
    assert parquet_gets and set(parquet_gets.values()) == {1}, parquet_gets
    before = len(requests)
    got = state(snap)  # the file actions: from the bytes already fetched
    assert [p for m, p in requests[before:] if p.endswith(".parquet")] == []
    assert got == state(local.snapshot())
    if v2:
        assert any("_sidecars/" in p for p in parquet_gets)
