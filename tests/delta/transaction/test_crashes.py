"""Crash safety of commits and checkpoints.

* A writer killed (SIGKILL) after writing its commit's temporary file but
  before the atomic put-if-absent leaves no visible version: readers see the
  old version, and the next writer gets the next number.
* A torn checkpoint (a truncated parquet file), whether ``_last_checkpoint``
  points at it, is stale, or is gone, still gives the right snapshot: the
  reader falls back to an older checkpoint or to the commits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])

# The child builds a one-file append, then blocks inside the put-if-absent:
# the commit's bytes are in a temporary file, the link to N.json not yet made.
_CHILD = r"""
import json, os, sys, time
import pyarrow as pa, pyarrow.parquet as pq
from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.table import DeltaTable

root, ready = sys.argv[1], sys.argv[2]
name = "part-00000-crash.c000.snappy.parquet"
pq.write_table(pa.table({"id": pa.array([99], pa.int64())}), os.path.join(root, name))

def blocked_link(src, dst, *args, **kwargs):
    with open(ready, "w") as f:
        json.dump({"tmp": src, "target": dst}, f)
    time.sleep(600)

os.link = blocked_link
table = DeltaTable(root)
txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
txn.add(AddFile(name, {}, os.path.getsize(os.path.join(root, name)), int(time.time() * 1000), True))
txn.commit(token="killed")
print("COMMITTED")
"""


def test_commit_killed_before_put_if_absent_leaves_no_version(tmp_path: Path, new_table, data_file) -> None:
    root = tmp_path / "table"
    new_table(root, SCHEMA, adds=[data_file(root, pa.table({"id": pa.array([1], pa.int64())}))])
    ready = tmp_path / "ready.json"

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not ready.exists():
            out, err = child.communicate(timeout=5) if child.poll() is not None else (b"", b"")
            pytest.fail(f"the child never blocked in put_if_absent (rc={child.poll()}): {out!r} {err!r}")
        time.sleep(0.1)  # let the ready file's writer finish
        where = json.loads(ready.read_text())
        assert Path(where["target"]).name == "00000000000000000001.json"
        assert Path(where["tmp"]).is_file(), "the commit's bytes should be fully staged"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    table = DeltaTable(str(root))
    assert not (root / "_delta_log" / "00000000000000000001.json").exists()
    assert table.latest_version() == 0
    assert table.snapshot().num_records == 1
    assert table.find_commit("killed") is None

    # The next writer takes version 1; the orphaned temp file confuses no reader.
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(data_file(root, pa.table({"id": pa.array([2], pa.int64())})))
    assert txn.commit(token="after").version == 1
    assert table.snapshot().num_records == 2

    deltalake = pytest.importorskip("deltalake")
    rs = deltalake.DeltaTable(str(root))
    assert rs.version() == 1
    assert sorted(rs.to_pyarrow_table().column("id").to_pylist()) == [1, 2]


# --- Torn checkpoints --------------------------------------------------------------


@pytest.fixture
def checkpointed(tmp_path: Path, new_table, data_file) -> dict:
    """25 versions made by the core: checkpoints at 10 and 20, and the
    expected live files of versions 15, 20 and 25, taken before any damage."""
    root = tmp_path / "table"
    new_table(root, SCHEMA, adds=[data_file(root, pa.table({"id": pa.array([0], pa.int64())}))])
    table = DeltaTable(str(root))
    for v in range(1, 26):
        snap = table.snapshot()
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
        txn.add(data_file(root, pa.table({"id": pa.array([v], pa.int64())})))
        if v % 4 == 0:  # some rewrites, so that removes are replayed too
            txn.read_files([snap.files[0]])
            txn.add(snap.files[0].remove(snap.timestamp + 1))
        txn.commit(token=f"v{v}")
    log = root / "_delta_log"
    assert (log / f"{10:020d}.checkpoint.parquet").is_file()
    assert (log / f"{20:020d}.checkpoint.parquet").is_file()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 20
    expected = {v: sorted(a.path for a in table.snapshot(version=v).files) for v in (15, 20, 25)}
    return {"root": root, "log": log, "expected": expected}


def _tear(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    "last_checkpoint",
    ["points-at-torn", "stale", "missing", "garbage"],
)
def test_torn_checkpoint_falls_back(checkpointed: dict, last_checkpoint: str) -> None:
    log: Path = checkpointed["log"]
    torn = log / f"{20:020d}.checkpoint.parquet"
    _tear(torn)
    last = log / "_last_checkpoint"
    if last_checkpoint == "stale":
        last.write_text(json.dumps({"version": 10, "size": 1}))
    elif last_checkpoint == "missing":
        last.unlink()
    elif last_checkpoint == "garbage":
        last.write_bytes(b"\x00\x01{not json")

    table = DeltaTable(str(checkpointed["root"]))
    snap = table.snapshot()
    assert snap.version == 25
    assert sorted(a.path for a in snap.files) == checkpointed["expected"][25]
    assert sorted(a.path for a in table.snapshot(version=20).files) == checkpointed["expected"][20]
    assert sorted(a.path for a in table.snapshot(version=15).files) == checkpointed["expected"][15]


def test_every_checkpoint_torn_replays_the_commits(checkpointed: dict) -> None:
    log: Path = checkpointed["log"]
    _tear(log / f"{10:020d}.checkpoint.parquet")
    _tear(log / f"{20:020d}.checkpoint.parquet")
    snap = DeltaTable(str(checkpointed["root"])).snapshot()
    assert snap.version == 25
    assert sorted(a.path for a in snap.files) == checkpointed["expected"][25]


def test_checkpoint_missing_its_commit_history_and_torn_is_an_error(checkpointed: dict, tmp_path: Path) -> None:
    """With the commits before a torn checkpoint gone, nothing can rebuild the
    table; the reader must say so instead of returning a partial snapshot."""
    from airflow_delta_provider.delta.errors import CorruptLogError, VersionNotFoundError

    copy = tmp_path / "copy"
    shutil.copytree(checkpointed["root"], copy)
    log = copy / "_delta_log"
    for v in range(0, 20):
        (log / f"{v:020d}.json").unlink()
    (log / f"{10:020d}.checkpoint.parquet").unlink()
    _tear(log / f"{20:020d}.checkpoint.parquet")
    with pytest.raises((CorruptLogError, VersionNotFoundError)):
        DeltaTable(str(copy)).snapshot()
