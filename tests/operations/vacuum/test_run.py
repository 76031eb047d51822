"""VACUUM (operations/vacuum/run.py): dry run, START/END commits, deletes on
the driver and on executors, the retention check, the writer gate, abandoned
staging folders, and a property over random histories of real commands."""

from __future__ import annotations

import os
import shutil
import time
import uuid

import pytest

from airflow_delta_provider.delta.errors import RetentionTooShortError, UnsupportedFeatureError
from airflow_delta_provider.delta.storage.hidden_paths import STAGING_PREFIX
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.vacuum import run as vacuum_cmd
from tests.operations.dml.dml_support import (
    PLAIN_GOLDEN,
    data_files,
    deltalake_table,
    rows_deltalake,
    rows_duckdb,
    state,
)
from tests.operations.runs import run_vacuum

pytest.importorskip("deltalake")

DAY = 24 * 3600


def age(path: str, seconds: float) -> None:
    """Make every data file ``seconds`` old."""
    ts = time.time() - seconds
    for rel in data_files(path):
        os.utime(os.path.join(path, rel), (ts, ts))


def table_with_garbage(tmp_path, n_orphans: int = 3) -> tuple[str, set[str]]:
    """A partitioned table with old files: live ones, tombstoned ones (a
    deltalake overwrite of partition 'b'), and orphans; returns the orphans."""
    from deltalake import DeltaTable as RsTable

    path = deltalake_table(tmp_path / "t", ["part"])
    RsTable(path).delete("part = 'b'")
    os.makedirs(os.path.join(path, "part=zz"), exist_ok=True)
    orphans = {f"part=a/orphan-{i}.parquet" for i in range(n_orphans - 1)} | {"part=zz/orphan.parquet"}
    for rel in orphans:
        with open(os.path.join(path, rel), "wb") as fh:
            fh.write(b"not parquet")
    with open(os.path.join(path, ".hidden-old"), "wb") as fh:
        fh.write(b"x")
    age(path, 8 * DAY)
    return path, orphans


def searched_dirs(path: str) -> int:
    """delta-spark's numVacuumedDirectories: the root and every folder under it that is not hidden."""
    count = 1
    for _root, dirs, _files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        count += len(dirs)
    return count


def live_files(path: str) -> set[str]:
    from urllib.parse import unquote

    return {unquote(f.path) for f in DeltaTable(path).snapshot().files}


def test_dry_run_lists_orphans_and_changes_nothing(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    before = state(path)
    result = run_vacuum(spark, path, dry_run=True)
    assert result.version is None
    assert sorted(result.files) == sorted(os.path.join(path, rel) for rel in orphans)
    assert result.metrics["numFilesToDelete"] == len(orphans)
    assert result.metrics["sizeOfDataToDelete"] == sum(os.path.getsize(p) for p in result.files)
    assert state(path) == before


def test_vacuum_deletes_orphans_keeps_live_and_recent_tombstones(spark, tmp_path, duckdb_delta):
    path, orphans = table_with_garbage(tmp_path)
    rows = rows_deltalake(path)
    v0, _, files0 = state(path)
    searched = searched_dirs(path)
    assert searched == 4  # the root, part=a, part=b and part=zz (emptied and deleted, but searched)
    result = run_vacuum(spark, path, token="vac-1")
    assert result.version == v0 + 2
    history = DeltaTable(path).history(limit=2)
    assert [h["operation"] for h in history] == ["VACUUM END", "VACUUM START"]
    assert history[0]["operationParameters"]["status"] == "COMPLETED"
    assert history[0]["operationMetrics"] == {
        "numDeletedFiles": str(len(orphans)),
        "numVacuumedDirectories": str(searched),
    }
    assert history[1]["operationParameters"]["retentionCheckEnabled"] is True
    assert history[0]["isolationLevel"] == "SnapshotIsolation"
    assert history[0]["tags"]["airflow.operationToken"] == "vac-1"
    # the tombstoned files are within the 7-day retention (deleted just now): kept
    assert data_files(path) == files0 - orphans
    assert not os.path.exists(os.path.join(path, "part=zz"))
    assert rows_deltalake(path) == rows
    assert rows_duckdb(duckdb_delta, path) == rows


def test_zero_retention_without_check_removes_tombstoned_files(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    result = run_vacuum(spark, path, retention_hours=0, enforce_retention=False)
    assert data_files(path) == live_files(path) | {".hidden-old"}
    assert result.metrics["numDeletedFiles"] > len(orphans)
    assert os.listdir(os.path.join(path, "_delta_log"))


def test_young_files_are_kept(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    age(path, 1 * DAY)  # everything is now one day old, within 7 days
    result = run_vacuum(spark, path)
    assert result.metrics["numDeletedFiles"] == 0
    assert orphans <= data_files(path)


def test_retention_too_short_is_refused_and_changes_nothing(spark, tmp_path):
    path, _ = table_with_garbage(tmp_path)
    before = state(path)
    with pytest.raises(RetentionTooShortError):
        run_vacuum(spark, path, retention_hours=1)
    with pytest.raises(RetentionTooShortError):
        run_vacuum(spark, path, retention_hours=-1, enforce_retention=False)
    assert state(path) == before


def test_large_deletes_run_on_executors(spark, tmp_path, monkeypatch):
    path, orphans = table_with_garbage(tmp_path, n_orphans=12)
    monkeypatch.setattr(vacuum_cmd, "PARALLEL_DELETE_THRESHOLD", 4)
    monkeypatch.setattr(vacuum_cmd, "_FILES_PER_TASK", 3)
    result = run_vacuum(spark, path)
    assert result.metrics["numDeletedFiles"] == len(orphans)
    assert not orphans & data_files(path)


def test_writer_gate_refuses_vacuum_protocol_check_table(spark, tmp_path, golden_dir):
    path = str(tmp_path / "t")
    shutil.copytree(golden_dir / "basic-with-vacuum-protocol-check-feature", path)
    before = state(path)
    with pytest.raises(UnsupportedFeatureError, match="vacuumProtocolCheck"):
        run_vacuum(spark, path, dry_run=True)
    assert state(path) == before


@pytest.mark.parametrize("name", PLAIN_GOLDEN)
def test_vacuum_of_golden_copies_keeps_every_live_row(spark, golden_copy, duckdb_delta, name):
    """Tables delta-spark wrote: old tombstoned files go, live ones stay, readers agree."""
    path = golden_copy(name)
    before = rows_duckdb(duckdb_delta, path)
    live = live_files(path)
    age(path, 8 * DAY)
    tombstoned = {rel for rel in data_files(path) if rel not in live and rel.endswith(".parquet")}
    result = run_vacuum(spark, path)
    assert result.operation == "VACUUM" and result.version is not None
    left = data_files(path)
    assert live <= left and not (tombstoned & left)
    assert rows_duckdb(duckdb_delta, path) == before
    if name != "basic-decimal-table":  # delta-rs misreads its negative partition value
        assert rows_deltalake(path) == before


# --- abandoned staging folders -------------------------------------------------


def age_tree(folder: str, seconds: float) -> None:
    """Make every file and folder under ``folder`` (itself included) ``seconds`` old."""
    ts = time.time() - seconds
    for dirpath, _dirs, names in os.walk(folder, topdown=False):
        for name in names:
            os.utime(os.path.join(dirpath, name), (ts, ts))
        os.utime(dirpath, (ts, ts))


def leave_staging_folder(spark, path: str) -> str:
    """What a driver killed mid-write leaves: a finished Spark job's files
    (parts and their ``.crc``s) and an unfinished one's ``_temporary`` tree."""
    stage = os.path.join(path, f"{STAGING_PREFIX}{uuid.uuid4()}")
    spark.range(5).write.parquet(stage)
    attempt = os.path.join(stage, "_temporary", "0", "_temporary", "attempt_202401010000_0001_m_000000_0")
    os.makedirs(attempt)
    with open(os.path.join(attempt, "part-00000-x.snappy.parquet"), "wb") as fh:
        fh.write(b"half written")
    return stage


def test_abandoned_staging_folder_is_reclaimed_whole(spark, tmp_path):
    path, orphans = table_with_garbage(tmp_path)
    old_stage = leave_staging_folder(spark, path)
    age_tree(old_stage, 8 * DAY)
    busy_stage = leave_staging_folder(spark, path)  # a write in progress: one young file
    age_tree(busy_stage, 8 * DAY)
    crc = next(n for n in sorted(os.listdir(busy_stage)) if n.endswith(".crc"))
    os.utime(os.path.join(busy_stage, crc))
    staged = {rel for rel in data_files(path) if rel.startswith(os.path.basename(old_stage) + "/")}
    assert any(os.path.basename(rel).startswith(".part-") for rel in staged)  # Spark's checksums
    rows = rows_deltalake(path)
    before = state(path)
    searched = searched_dirs(path)  # the staging folders are hidden: not searched, yet reclaimed

    dry = run_vacuum(spark, path, dry_run=True)
    assert sorted(dry.files) == sorted(os.path.join(path, rel) for rel in orphans | staged)
    assert state(path) == before

    result = run_vacuum(spark, path)
    assert not os.path.exists(old_stage)
    assert data_files(path) == before[2] - orphans - staged
    assert dict(result.metrics) == {"numDeletedFiles": len(orphans | staged), "numVacuumedDirectories": searched}
    assert rows_deltalake(path) == rows


# --- property: random histories of the real commands ---------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

HOUR_MS = 3_600_000
_MARGIN_MS = HOUR_MS // 2  # keeps every age clear of the retention bounds
_SPARK_STEP = st.sampled_from(["append", "update", "delete", "checkpoint", "orphan", "crash"])
_CONDITIONS = ["id % 3 = {k}", "p = 'a'", "id < {k}", "v > {k}"]


@hypothesis.settings(max_examples=6, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(
    partitioned=st.booleans(),
    steps=st.lists(st.tuples(_SPARK_STEP, st.integers(0, 10_000)), min_size=3, max_size=6),
    file_ages_h=st.lists(st.integers(0, 400), min_size=8, max_size=8),
    # below the table's 168 h, so no checkpoint drops a tombstone VACUUM must honour
    tomb_ages_h=st.lists(st.integers(0, 160), min_size=6, max_size=6),
    retention_h=st.sampled_from([0, 1, 24, 168, 300]),
)
def test_spark_vacuum_never_deletes_live_or_retained_files(
    spark, tmp_path_factory, partitioned, steps, file_ages_h, tomb_ages_h, retention_h
):
    """Over random histories of APPEND/UPDATE/DELETE/CHECKPOINT (plus orphans
    and abandoned staging folders), with random file and tombstone ages,
    run_vacuum keeps every live file, every tombstone within the retention and
    every young file, leaves the rows unchanged, and deletes exactly the rest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from airflow_delta_provider.operations.dml import copy_on_write as dml
    from tests.operations.runs import run_append, run_checkpoint, run_delete, run_update

    base = tmp_path_factory.mktemp("svac")
    path, src = str(base / "t"), base / "src"
    src.mkdir()
    next_id = 0

    def append(n: int) -> None:
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        source = str(src / f"batch-{next_id}.parquet")
        data = {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array(["ab"[i % 2] for i in ids]),
            "v": pa.array(ids, pa.int64()),
        }
        pq.write_table(pa.table(data), source)
        run_append(spark, path, source, partition_by=["p"] if partitioned and not os.path.exists(path) else None)

    def age_new(seen: set[str], step: int) -> None:
        # Files a step wrote get an age drawn for that step (and the file's place in it).
        for j, rel in enumerate(sorted(data_files(path) - seen)):
            ts = (time.time() * 1000 - file_ages_h[(step + j) % len(file_ages_h)] * HOUR_MS - _MARGIN_MS) / 1000
            os.utime(os.path.join(path, rel), (ts, ts))

    def crash(seed: int, step: int) -> None:
        stage = os.path.join(path, f"{STAGING_PREFIX}{uuid.uuid4()}")
        os.makedirs(os.path.join(stage, "_temporary", "0"))
        for rel in ("part-00000-x.snappy.parquet", ".part-00000-x.snappy.parquet.crc", "_temporary/0/part-00001-x"):
            with open(os.path.join(stage, rel), "wb") as fh:
                fh.write(b"x")
        for j, (dirpath, _dirs, names) in enumerate(os.walk(stage, topdown=False)):
            for k, name in enumerate([*names, None]):  # None: the folder itself, after its content
                age_ms = file_ages_h[(seed + step + j + k) % len(file_ages_h)] * HOUR_MS + _MARGIN_MS
                ts = (time.time() * 1000 - age_ms) / 1000
                os.utime(os.path.join(dirpath, name) if name else dirpath, (ts, ts))

    append(1 + steps[0][1] % 6)
    age_new(set(), 0)
    for i, (step, seed) in enumerate(steps, start=1):
        seen = data_files(path)
        condition = _CONDITIONS[seed % len(_CONDITIONS)].format(k=seed % 7)
        tomb_ms = int(time.time() * 1000) - tomb_ages_h[i % len(tomb_ages_h)] * HOUR_MS - _MARGIN_MS
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dml, "now_ms", lambda tomb_ms=tomb_ms: tomb_ms)  # the removes' deletionTimestamp
            if step == "append":
                append(1 + seed % 6)
            elif step == "update":
                run_update(spark, path, condition, {"v": "v + 100"})
            elif step == "delete":
                run_delete(spark, path, condition)
            elif step == "checkpoint":
                run_checkpoint(spark, path)
            elif step == "orphan":
                folder = os.path.join(path, f"p={'ab'[seed % 2]}" if partitioned else "")
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, f"orphan-{seed}.parquet"), "wb") as fh:
                    fh.write(b"x")
        if step == "crash":
            crash(seed, i)
        else:
            age_new(seen, i)

    snap = DeltaTable(path).snapshot()
    live = live_files(path)
    tombstones = {rel_of(t.path): t.deletion_timestamp or 0 for t in snap.all_tombstones}
    now_ms = time.time() * 1000
    delete_before = now_ms - retention_h * HOUR_MS
    kept_tombs = {rel for rel, ts in tombstones.items() if ts >= delete_before}
    entries = {}  # every file and folder outside _delta_log: rel -> (mtime ms, is dir)
    for dirpath, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in [*dirs, *names]:
            full = os.path.join(dirpath, name)
            entries[os.path.relpath(full, path)] = (os.stat(full).st_mtime_ns / 1e6, name in dirs)
    files_before = {rel for rel, (_m, is_dir) in entries.items() if not is_dir}
    young = {rel for rel in files_before if entries[rel][0] >= delete_before}
    stages = {
        rel for rel, (_m, is_dir) in entries.items() if is_dir and rel.startswith(STAGING_PREFIX) and "/" not in rel
    }
    reclaimable_stages = {
        s
        for s in stages
        if all(m < delete_before for rel, (m, _d) in entries.items() if rel == s or rel.startswith(s + "/"))
    }
    expected_gone = {
        rel
        for rel in files_before - live - kept_tombs - young
        if rel.split("/", 1)[0] in reclaimable_stages or not rel.startswith(STAGING_PREFIX)
    }
    rows = rows_deltalake(path)

    dry = run_vacuum(spark, path, dry_run=True, retention_hours=retention_h, enforce_retention=retention_h >= 168)
    assert {os.path.relpath(p, path) for p in dry.files} == expected_gone
    run_vacuum(spark, path, retention_hours=retention_h, enforce_retention=retention_h >= 168)

    left = data_files(path)
    assert live <= left, "a live file was deleted"
    assert kept_tombs & files_before <= left, "a tombstone within the retention was deleted"
    assert young <= left, "a file younger than the retention was deleted"
    assert rows_deltalake(path) == rows
    assert left == files_before - expected_gone
    assert not any(os.path.exists(os.path.join(path, s)) for s in reclaimable_stages)


def rel_of(log_path: str) -> str:
    from urllib.parse import unquote

    return unquote(log_path)


def test_vacuum_leaves_v2_checkpoint_sidecars_alone(tmp_path):
    """VACUUM never touches ``_delta_log``: not the sidecars of a V2
    checkpoint, not even an unreferenced old one (log cleanup's to sweep).
    Needs no Spark: the few deletes run on the driver."""
    from dataclasses import replace

    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    path, orphans = table_with_garbage(tmp_path)
    table = DeltaTable(path)
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", parameters={}, snapshot=snap)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.checkpointPolicy": "v2"}))
    txn.commit(metrics={})
    write_checkpoint(table, table.snapshot())
    sidecars = os.path.join(path, "_delta_log", "_sidecars")
    with open(os.path.join(sidecars, "unreferenced.parquet"), "wb") as fh:
        fh.write(b"x")
    old = time.time() - 400 * DAY
    for name in os.listdir(sidecars):
        os.utime(os.path.join(sidecars, name), (old, old))
    before = sorted(os.listdir(sidecars))
    assert len(before) == 2

    result = run_vacuum(None, path, retention_hours=0, enforce_retention=False)
    assert result.metrics["numDeletedFiles"] > len(orphans)
    assert data_files(path) == live_files(path) | {".hidden-old"}
    assert sorted(os.listdir(sidecars)) == before
    assert DeltaTable(path).snapshot().num_files == snap.num_files
