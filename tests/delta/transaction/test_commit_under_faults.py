"""Commits through a store that fails: moto's S3 and Azurite behind the fault proxy.

- **A lost answer at each commit step** (the commit file, its ``.crc``, the
  checkpoint, ``_last_checkpoint``): the server applies the write and the
  client sees a timeout, a reset or a 500. The commit is recognised as ours
  (the read-back holds the bytes, with our ``txnId``), reported once at its
  version, and the post-commit work runs once.
- **Four writers x ten appends with 10% of requests failing** (every fault
  kind, seeded): :func:`append_concurrently`, run by
  tests/delta_spark/test_appends_under_faults.py, where delta-rs and
  delta-spark read the rows the core reads.

``make test`` runs a seeded subset (each step once, three appends a writer);
``FAULTS_ALL=1`` (``make test-faults``) every step with every ambiguous
fault, ten appends a writer, three seeds.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.checksum.version_checksum import read_checksum
from airflow_delta_provider.delta.errors import CommitOutcomeUnknownError, StorageError
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta.conftest import create_table, read_snapshot, write_data_file
from tests.fault_proxy import (
    AMBIGUOUS,
    CHECKPOINTS,
    CHECKSUMS,
    COMMITS,
    LAST_CHECKPOINT,
    Rule,
    lost_commit_answers,
    random_faults,
)

ALL = os.environ.get("FAULTS_ALL") == "1"
SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64())])
#: Client settings that keep a lost answer short: a 0.5 s timeout, quick back-off.
FAST = {"timeout": "500ms", "retry_init_backoff": "10ms", "retry_max_backoff": "200ms"}

STEPS = {"commit": COMMITS, "checksum": CHECKSUMS, "checkpoint": CHECKPOINTS, "last_checkpoint": LAST_CHECKPOINT}
#: make test: each step once, each ambiguous fault at least once.
SUBSET = [("commit", "timeout_after"), ("checksum", "reset_after"), ("checkpoint", "500_after"),
          ("last_checkpoint", "reset_after")]  # fmt: skip
CASES = [(s, f) for s in STEPS for f in sorted(AMBIGUOUS - {"drop_body"})] if ALL else SUBSET


@pytest.fixture
def store(faulty_store, monkeypatch):
    """A faulty store, its settings also in the environment (the helpers' data writes)."""
    for key, value in faulty_store.env.items():
        monkeypatch.setenv(key, value)
    faulty_store.faults.hold_seconds = 0.8  # past FAST's 0.5 s timeout
    return faulty_store


def _rows(writer: int, seq: int) -> pa.Table:
    return pa.table({"writer": [writer], "seq": [seq]}, schema=SCHEMA)


def _commits(table: DeltaTable) -> list[int]:
    return [f.version for f in table.log_store.list_from(0) if f.kind == "commit"]


@pytest.mark.parametrize(("step", "fault"), CASES)
def test_a_lost_answer_at_each_commit_step_commits_once(store, new_table, data_file, snapshot_rows, step, fault):
    uri = store.uri("t")
    new_table(uri, SCHEMA, configuration={"delta.checkpointInterval": "2"}, adds=[data_file(uri, _rows(0, 0))])
    table = DeltaTable(uri, {**store.storage_options, **FAST})
    for seq in (1, 2):  # version 2 is due a checkpoint
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
        txn.add(data_file(uri, _rows(0, seq)))
        if seq == 1:
            txn.commit(metrics={}, token="v1")
            continue
        store.faults.requests.clear()
        with store.faults.inject(Rule(fault, methods=("PUT",), paths=(STEPS[step],), schedule=frozenset({1}))) as hit:
            result = txn.commit(metrics={}, token="v2")

    assert [i.fault for i in hit] == [fault]
    assert result.version == 2 and result.attempts == 1
    assert _commits(table) == [0, 1, 2]
    assert table.find_commit("v2")[0] == 2
    assert txn.post_commit_outcome is not None and txn.post_commit_outcome.checkpoint_version == 2
    assert json.loads(table.log_store.read("_last_checkpoint"))["version"] == 2
    checksum = read_checksum(table.log_store, 2)
    assert checksum is not None and checksum.txn_id == txn.txn_id
    puts = Counter(path.rsplit("/", 1)[-1] for method, path in store.faults.requests if method == "PUT")
    # each file once: the post-commit work ran once (the file hit may see one request retry)
    for name, its_step in (
        ("00000000000000000002.json", "commit"),
        ("00000000000000000002.crc", "checksum"),
        ("00000000000000000002.checkpoint.parquet", "checkpoint"),
        ("_last_checkpoint", "last_checkpoint"),
    ):
        assert puts[name] in ((1, 2) if step == its_step else (1,)), puts
    assert sorted(snapshot_rows(table.snapshot())["seq"].to_pylist()) == [0, 1, 2]


def test_a_commit_whose_second_create_loses_its_answer_too_is_recognised(store, new_table, data_file, snapshot_rows):
    """The create refused with no retry left (503), then the create again held past the
    client's timeout after the store applied it: read back, the commit is ours, once."""
    uri = store.uri("t")
    new_table(uri, SCHEMA, adds=[data_file(uri, _rows(0, 0))])
    table = DeltaTable(uri, {**store.storage_options, **FAST, "max_retries": "0"})
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(data_file(uri, _rows(0, 1)))
    refused = Rule("503", methods=("PUT",), paths=(COMMITS,), schedule=frozenset({1}))
    lost = Rule("timeout_after", methods=("PUT",), paths=(COMMITS,), schedule=frozenset({1}))
    with store.faults.inject(refused, lost) as hit:
        result = txn.commit(metrics={}, token="v1")

    assert [i.fault for i in hit] == ["503", "timeout_after"]
    assert (result.version, result.attempts) == (1, 1)
    assert _commits(table) == [0, 1] and table.find_commit("v1")[0] == 1
    assert sorted(snapshot_rows(table.snapshot())["seq"].to_pylist()) == [0, 1]


#: make test: four writers of three appends each, one seed (tests/delta_spark/test_appends_under_faults.py
#: runs them and reads the table with delta-rs and delta-spark).
WRITERS, APPENDS = (4, 10) if ALL else (4, 3)
SEEDS = [7, 11, 23] if ALL else [7]


def append_concurrently(store, seed: int, writers: int = WRITERS, appends: int = APPENDS) -> tuple[str, Counter[str]]:
    """``writers`` threads each appending ``appends`` rows ``(writer, seq)`` to a
    new table in ``store``, through 10% of requests failing (every fault kind,
    seeded). A failed append is tried again as Airflow retries a task,
    unless its ``txn`` shows an earlier try committed it. Checks that every
    append landed once in dense versions; returns the table and the
    failures the writers met, by error type."""
    uri = store.uri("t")
    create_table(uri, SCHEMA)
    options = {**store.storage_options, **FAST}
    failures: Counter[str] = Counter()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        table = DeltaTable(uri, options)
        app = f"writer-{w}"
        for seq in range(appends):
            for _attempt in range(10):  # as Airflow retries a failed task
                try:
                    snap = table.snapshot()
                    if (snap.txn_version(app) or -1) >= seq:
                        break  # an earlier try committed it (its answer was lost)
                    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
                    txn.set_txn(app, seq)
                    txn.add(write_data_file(uri, _rows(w, seq)))
                    txn.commit(metrics={}, token=f"{app}-{seq}")
                    break
                except (StorageError, CommitOutcomeUnknownError) as exc:
                    failures[type(exc).__name__] += 1
            else:
                errors.append(AssertionError(f"{app} could not append {seq}"))

    with store.faults.inject(*random_faults(0.10), seed=seed) as hit:
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    table = DeltaTable(uri, store.storage_options)
    assert _commits(table) == list(range(writers * appends + 1))
    rows = read_snapshot(table.snapshot())
    assert sorted(zip(rows["writer"].to_pylist(), rows["seq"].to_pylist())) == expected_appends(writers, appends)
    print(
        f"seed {seed}: {len(hit)} faults injected {dict(Counter(i.fault for i in hit))}; lost commit answers {lost_commit_answers(hit)}; task retries {dict(failures)}"
    )
    return uri, failures


def expected_appends(writers: int = WRITERS, appends: int = APPENDS) -> list[tuple[int, int]]:
    return sorted((w, s) for w in range(writers) for s in range(appends))
