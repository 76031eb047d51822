"""VACUUM LITE through the command (operations/vacuum/run.py, run without
Spark): it deletes what a full VACUUM deletes but orphans, records
delta-spark's ``_last_vacuum_info`` so the next run reads only newer commits,
changes nothing when refused, and sends fewer store requests on S3."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from airflow_delta_provider.delta.checksum.version_checksum import read_checksum
from airflow_delta_provider.delta.errors import VacuumLiteUnavailableError
from airflow_delta_provider.delta.table import DeltaTable
from tests.operations.dml.dml_support import data_files, state
from tests.operations.runs import run_vacuum
from tests.storage_servers import s3_settings, upload_tree

deltalake = pytest.importorskip("deltalake")

ORPHANS = {"p=a/orphan.parquet", "orphan-root.parquet"}


def history(path: str, rounds: int = 3) -> str:
    """A delta-rs table with appends, deletes, compaction and an overwrite, plus orphans;
    data files made an hour old."""
    import pyarrow as pa

    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": pa.array(["ab"[i % 2] for i in range(40)])})
    for i in range(rounds):
        deltalake.write_deltalake(path, data.slice(i * 10, 10), mode="append", partition_by=["p"])
    rs = deltalake.DeltaTable(path)
    rs.delete("id < 5")
    rs.optimize.compact()
    deltalake.write_deltalake(path, data.slice(0, 3), mode="overwrite", partition_by=["p"])
    for rel in ORPHANS:
        os.makedirs(os.path.dirname(os.path.join(path, rel)) or path, exist_ok=True)
        with open(os.path.join(path, rel), "wb") as fh:
            fh.write(b"never in the log")
    ts = time.time() - 3600
    for rel in data_files(path):
        os.utime(os.path.join(path, rel), (ts, ts))
    return path


def vacuum(path: str, **kwargs):
    return run_vacuum(None, path, retention_hours=0, enforce_retention=False, **kwargs)


def test_lite_deletes_what_full_deletes_but_orphans_and_records_its_state(tmp_path):
    full_path = history(str(tmp_path / "full"))
    lite_path = str(tmp_path / "lite")
    shutil.copytree(full_path, lite_path)
    rows = deltalake.DeltaTable(full_path).to_pyarrow_table().sort_by("id")

    full = vacuum(full_path)
    lite = vacuum(lite_path, lite=True)
    assert data_files(lite_path) == data_files(full_path) | ORPHANS
    assert int(lite.metrics["numDeletedFiles"]) == int(full.metrics["numDeletedFiles"]) - len(ORPHANS)
    assert deltalake.DeltaTable(lite_path).to_pyarrow_table().sort_by("id") == rows
    history_ = DeltaTable(lite_path).history(limit=2)
    assert [h["operation"] for h in history_] == ["VACUUM END", "VACUUM START"]
    # delta-spark's LastVacuumInfo: the newest version read (the one before VACUUM START)
    info = json.loads((tmp_path / "lite" / "_delta_log" / "_last_vacuum_info").read_text())
    assert info == {"latestCommitVersionOutsideOfRetentionWindow": lite.version - 2}
    # a FULL vacuum records nothing, as delta-spark's does
    assert json.loads((tmp_path / "full" / "_delta_log" / "_last_vacuum_info").read_text()) == {}


def test_the_next_lite_run_reads_only_commits_since_the_last(tmp_path):
    from airflow_delta_provider.operations.vacuum.lite import plan_vacuum_lite

    path = history(str(tmp_path / "t"))
    first = vacuum(path, lite=True)
    deltalake.DeltaTable(path).delete("id = 1")
    table = DeltaTable(path)
    snap = table.snapshot()
    plan = plan_vacuum_lite(table, snap, now_ms=int(time.time() * 1000) + 1, retention_ms=0)
    # from the first run's VACUUM START, the version after the one it recorded
    assert plan.commit_range == (first.version - 1, snap.version)
    assert len(plan.plan.files) == 1  # the file the DELETE rewrote; the first run's are gone
    second = vacuum(path, lite=True)
    assert int(second.metrics["numDeletedFiles"]) == 1  # the file the DELETE rewrote


def test_lite_refused_on_a_cleaned_up_log_changes_nothing(tmp_path):
    path = history(str(tmp_path / "t"))
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    table = DeltaTable(path)
    write_checkpoint(table, table.snapshot())
    os.remove(os.path.join(path, "_delta_log", f"{0:020d}.json"))
    before = state(path)
    with pytest.raises(VacuumLiteUnavailableError, match="Please run VACUUM FULL"):
        vacuum(path, lite=True)
    assert state(path) == before
    vacuum(path)  # FULL still works, and takes the orphans too
    assert not ORPHANS & data_files(path)


def test_lite_sends_fewer_store_requests_than_full_on_s3(stoppable_s3, moto_server, tmp_path, monkeypatch):
    """Both dry runs and real runs, counted at the wire. FULL lists every
    folder of the table; LITE lists ``_delta_log`` only."""
    for key, value in stoppable_s3.env.items():
        monkeypatch.setenv(key, value)
    local = history(str(tmp_path / "t"), rounds=4)
    for i in range(8):  # more partitions: more for FULL to list, nothing more in the log
        os.makedirs(os.path.join(local, f"p=x{i}"), exist_ok=True)
        with open(os.path.join(local, f"p=x{i}", "orphan.parquet"), "wb") as fh:
            fh.write(b"x")
    direct = s3_settings(moto_server.endpoint)
    requests = stoppable_s3.proxy.requests
    counts: dict[str, list[tuple[str, str]]] = {}
    results = {}
    for mode in ("full", "lite"):
        uri = stoppable_s3.uri(mode)
        upload_tree(local, uri, direct)
        requests.clear()
        results[mode] = run_vacuum(None, uri, retention_hours=0, enforce_retention=False, lite=mode == "lite")
        counts[mode] = list(requests)
    lite_paths = [path for _method, path in counts["lite"]]
    assert not any("list-type" in p and "_delta_log" not in p for p in lite_paths), lite_paths
    assert len(counts["lite"]) < len(counts["full"]), (counts["lite"], counts["full"])
    # each commit LITE plans from is read once: the snapshot's replay keeps it for the planning
    planning = lite_paths[: next(i for i, (m, _p) in enumerate(counts["lite"]) if m == "PUT")]
    commit_gets = [p for p in planning if p.endswith(".json")]
    assert len(commit_gets) == len(set(commit_gets)), commit_gets
    deleted = {m: int(r.metrics["numDeletedFiles"]) for m, r in results.items()}
    assert deleted["lite"] == deleted["full"] - len(ORPHANS) - 8
    print(f"store requests: FULL {len(counts['full'])}, LITE {len(counts['lite'])}")


def core_history(root: str) -> str:
    """A table committed by the core: 12 versions, a checkpoint at 10 (the
    post-commit work's), and 3 files replaced an hour ago; data files of a byte."""
    from airflow_delta_provider.delta.actions.model import AddFile, Metadata

    old = int(time.time() * 1000) - 3_600_000
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'

    def new_add(i: int) -> AddFile:
        with open(os.path.join(root, f"f-{i}.parquet"), "wb") as fh:
            fh.write(b"x")
        return AddFile(f"f-{i}.parquet", {}, 1, old, True)

    os.makedirs(root)
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", snapshot=None)
    txn.update_metadata(Metadata.new(schema, [], {}, created_time=old))
    txn.add_all(new_add(i) for i in range(5))
    txn.commit()
    for v in range(1, 12):
        snap = table.snapshot()
        txn = table.transaction("WRITE", snapshot=snap)
        if v >= 9:
            victim = sorted(snap.files, key=lambda f: f.path)[0]
            txn.read_files([victim])
            txn.add(victim.remove(old))
        txn.add(new_add(100 + v))
        txn.commit()
    return root


def test_a_real_lite_run_on_s3_reads_each_log_file_once_and_loads_no_snapshot_for_end(
    stoppable_s3, moto_server, tmp_path, monkeypatch
):
    """The checkpoint is fetched once (its footer, actions and file actions
    from one GET); VACUUM END is committed on the version VACUUM START made,
    known without reading the log again, with the same commitInfo and a
    ``.crc`` that matches the table's state."""
    for key, value in stoppable_s3.env.items():
        monkeypatch.setenv(key, value)
    local = core_history(str(tmp_path / "t"))
    uri = stoppable_s3.uri("t")
    upload_tree(local, uri, s3_settings(moto_server.endpoint))
    requests = stoppable_s3.proxy.requests
    requests.clear()
    result = run_vacuum(None, uri, retention_hours=0, enforce_retention=False, lite=True)
    sent = list(requests)
    assert int(result.metrics["numDeletedFiles"]) == 3
    gets = [p for m, p in sent if m == "GET" and "list-type" not in p]
    assert len(gets) == len(set(gets)), gets  # no log file is read twice
    assert sum(p.endswith(".checkpoint.parquet") for p in gets) == 1
    first_put = next(i for i, (m, p) in enumerate(sent) if m == "PUT" and p.endswith(".json"))
    after_start = [p for _m, p in sent[first_put + 1 :]]
    assert not any("_last_checkpoint" in p or p.endswith(".parquet") for p in after_start), after_start
    assert not any("list-type" in p or m in ("GET", "HEAD") for m, p in sent[first_put + 1 :]), after_start
    table = DeltaTable(uri)
    end, start = table.history(limit=2)
    assert (start["operation"], end["operation"]) == ("VACUUM START", "VACUUM END")
    assert end["readVersion"] == start["version"] == result.version - 1
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert end["operationMetrics"] == {"numDeletedFiles": "3", "numVacuumedDirectories": "0"}
    snap = table.snapshot()
    assert snap.segment.checksum is not None
    assert len(snap.files) == 13  # reconciling the files checks them against END's .crc
    recorded = read_checksum(table.log_store, result.version)
    assert recorded is not None and recorded.to_bytes() != b""
    expected = snap.checksum()
    expected.txn_id = recorded.txn_id
    assert recorded.to_bytes() == expected.to_bytes()


def test_a_commit_between_start_and_end_is_kept_and_end_lands_after_it(tmp_path, monkeypatch):
    """END is made on START's version without reading the log; a writer that
    committed meanwhile wins that version, and END lands after it."""
    from airflow_delta_provider.delta.actions.model import AddFile
    from airflow_delta_provider.operations.vacuum import run as vacuum_command

    root = core_history(str(tmp_path / "t"))
    table = DeltaTable(root)
    deleting = vacuum_command._delete_files

    def a_writer_commits_then_delete(*args, **kwargs):
        txn = table.transaction("WRITE", snapshot=table.snapshot())
        txn.add(AddFile("late.parquet", {}, 1, int(time.time() * 1000), True))
        txn.commit()
        return deleting(*args, **kwargs)

    monkeypatch.setattr(vacuum_command, "_delete_files", a_writer_commits_then_delete)
    result = run_vacuum(None, root, retention_hours=0, enforce_retention=False, lite=True)
    end, write, start = table.history(limit=3)
    assert (start["operation"], write["operation"], end["operation"]) == ("VACUUM START", "WRITE", "VACUUM END")
    assert end["version"] == result.version == start["version"] + 2
    assert int(result.metrics["numDeletedFiles"]) == 3
    snap = table.snapshot()
    assert "late.parquet" in {f.path for f in snap.files}
    recorded = read_checksum(table.log_store, result.version)
    expected = snap.checksum()
    assert recorded is not None
    expected.txn_id = recorded.txn_id
    assert recorded.to_bytes() == expected.to_bytes()  # END's .crc counts the late file


def test_end_after_a_commit_that_turned_in_commit_timestamps_on_carries_one(tmp_path, monkeypatch):
    """END, made on START's version, lands after a writer's SET TBLPROPERTIES
    that turned in-commit timestamps on: it commits under the table as the
    writer left it, so with an ``inCommitTimestamp`` after the writer's
    (PROTOCOL.md: every commit once they are on has one)."""
    from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json
    from airflow_delta_provider.operations.vacuum import run as vacuum_command

    root = core_history(str(tmp_path / "t"))
    table = DeltaTable(root)
    deleting = vacuum_command._delete_files

    def ict_turned_on_then_delete(*args, **kwargs):
        alter_table(table, change_from_json({"set_properties": {"delta.enableInCommitTimestamps": "true"}}))
        return deleting(*args, **kwargs)

    monkeypatch.setattr(vacuum_command, "_delete_files", ict_turned_on_then_delete)
    result = run_vacuum(None, root, retention_hours=0, enforce_retention=False, lite=True)
    end, alter, start = table.history(limit=3)
    assert (start["operation"], alter["operation"], end["operation"]) == (
        "VACUUM START", "SET TBLPROPERTIES", "VACUUM END",
    )  # fmt: skip
    assert end["version"] == result.version
    assert end["inCommitTimestamp"] > alter["inCommitTimestamp"]
