"""The Spark operations (APPEND, UPDATE, DELETE, MERGE, OPTIMIZE) on an object
store through 10% of requests failing at random (every fault kind of
tests/fault_proxy.py, seeded), in ``arrow`` mode on the shared session:
the driver's log reads and commits and the Python workers' data reads and
writes all go through the proxy.

Each operation either commits exactly once with the right rows, or fails
with a retryable error and leaves the table as it was (the latest version
unchanged unless the commit it made is read back as its own, every commit
readable). Run again as Airflow retries a task, with the same token, each
lands once in all: the versions are dense and each token is in one commit.

``make test`` runs APPEND and MERGE with one seed on S3; ``FAULTS_ALL=1``
(``make test-faults``) all five with three seeds on S3 and Azure. ``io="hadoop"`` through S3A:
tests/spark/runtime/test_hadoop_s3a_under_faults.py.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable

from airflow_delta_provider.delta.actions.model import TOKEN_TAG, parse_commit
from airflow_delta_provider.delta.errors import CommitOutcomeUnknownError, DeltaError, StorageError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.hooks.delta_operation import is_permanent
from tests.fault_proxy import lost_commit_answers, random_faults
from tests.operations.runs import run_append, run_delete, run_merge, run_optimize, run_update
from tests.spark.arrow_support import arrow_workers  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("arrow_workers")

ALL = os.environ.get("FAULTS_ALL") == "1"
SEEDS = [1, 2, 4] if ALL else [1]
#: make test: APPEND (a write) and MERGE (a read, a rewrite and an insert); FAULTS_ALL=1 all five.
STEPS = ["APPEND", "UPDATE", "DELETE", "MERGE", "OPTIMIZE"] if ALL else ["APPEND", "MERGE"]
SCHEMA = pa.schema([("id", pa.int64()), ("val", pa.int64())])
FAST = {"timeout": "5s", "retry_init_backoff": "10ms", "retry_max_backoff": "200ms"}
#: The errors a task may fail with under faults: Airflow retries them.
RETRYABLE = (StorageError, CommitOutcomeUnknownError)


def _rows(ids: range | list[int], val: Any = None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "val": [i if val is None else val(i) for i in ids]}, schema=SCHEMA)


def _source(tmp_path, name: str, table: pa.Table) -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    return str(folder)


def expected_rows(steps: list[str]) -> list[tuple[int, int]]:
    """What ``steps`` (of APPEND, UPDATE, DELETE, MERGE and OPTIMIZE below) leave, computed in Python."""
    rows = {i: i for i in range(30 if "APPEND" in steps else 20)}  # created with 0..19
    if "UPDATE" in steps:
        rows.update({i: v * 10 for i, v in rows.items() if i % 3 == 0})
    if "DELETE" in steps:
        rows = {i: v for i, v in rows.items() if i % 5 != 0}
    if "MERGE" in steps:
        rows.update({i: -i for i in range(25, 35)})
    return sorted(rows.items())


def _commits(table: DeltaTable) -> list[tuple[int, str, str | None]]:
    out = []
    for f in table.log_store.list_from(0):
        if f.kind == "commit":
            info = next(a for a in parse_commit(table.log_store.read(f.name)) if a.KEY == "commitInfo")
            out.append((f.version, info.raw["operation"], info.raw.get("tags", {}).get(TOKEN_TAG)))
    return out


def as_a_retried_task(run, table: DeltaTable, token: str, failures: Counter[str]) -> None:
    """Run until the commit carrying ``token`` is in the log, as Airflow retries a
    task (the hook first looks for the token). Each failure must be
    retryable and leave the table as it was, or committed once."""
    for _ in range(6):
        if table.find_commit(token) is not None:
            return
        before = table.latest_version()
        try:
            run()
            return
        except DeltaError as exc:
            failures[type(exc).__name__] += 1
            assert isinstance(exc, RETRYABLE) and not is_permanent(type(exc).__name__), repr(exc)
            after = table.latest_version()
            landed = table.find_commit(token, since_version=before + 1)
            assert after == before or (landed is not None and after == landed[0] == before + 1), (before, after)
            table.snapshot()  # the log still reads
    raise AssertionError(f"{token}: six tries failed ({dict(failures)})")


@pytest.fixture
def store(faulty_store, monkeypatch):
    """A faulty store, its settings in the driver's environment (forwarded to the Python workers)."""
    for key, value in {**faulty_store.env, "DELTA_STORE_RETRY_INIT_BACKOFF": "10ms"}.items():
        monkeypatch.setenv(key, value)
    faulty_store.faults.hold_seconds = 0.8
    return faulty_store


@pytest.mark.parametrize("seed", SEEDS)
def test_spark_operations_through_ten_percent_faults_commit_once(spark, store, tmp_path, seed):
    uri = store.uri("t")
    options = {**store.storage_options, **FAST}
    run_append(spark, uri, _source(tmp_path, "first", _rows(range(20))), storage_options=options, io="arrow")
    appended = _source(tmp_path, "more", _rows(range(20, 30)))
    changes = _source(tmp_path, "changes", _rows(range(25, 35), lambda i: -i))
    clauses = [{"when": "matched", "update": {"val": "s.val"}}, {"when": "not_matched", "insert": "*"}]
    every = {
        "APPEND": lambda token: run_append(spark, uri, appended, token=token, io="arrow", storage_options=options),
        "UPDATE": lambda token: run_update(spark, uri, "id % 3 = 0", {"val": "val * 10"}, token, "arrow", options),
        "DELETE": lambda token: run_delete(spark, uri, "id % 5 = 0", token, "arrow", options),
        "MERGE": lambda token: run_merge(
            spark, uri, changes, "t.id = s.id", clauses, token=token, io="arrow", storage_options=options
        ),
        "OPTIMIZE": lambda token: run_optimize(spark, uri, token=token, io="arrow", storage_options=options),
    }
    steps = {name: every[name] for name in STEPS}
    table = DeltaTable(uri, store.storage_options)
    failures: Counter[str] = Counter()
    with store.faults.inject(*random_faults(0.10), seed=seed) as hit:
        for name, step in steps.items():
            token = f"{name}-{seed}"
            as_a_retried_task(lambda step=step, token=token: step(token), table, token, failures)

    commits = _commits(table)
    assert [v for v, _op, _t in commits] == list(range(len(steps) + 1))  # dense: each operation once
    assert [op for _v, op, _t in commits][1:] == [{"APPEND": "WRITE"}.get(name, name) for name in steps]
    assert [t for _v, _op, t in commits][1:] == [f"{name}-{seed}" for name in steps]
    rows = RsTable(uri, storage_options=store.storage_options).to_pyarrow_table()
    assert sorted(zip(rows["id"].to_pylist(), rows["val"].to_pylist())) == expected_rows(STEPS)
    assert hit, "no fault was injected"
    print(
        f"seed {seed}: {len(hit)} faults {dict(Counter(i.fault for i in hit))}; lost commit answers {lost_commit_answers(hit)}; task retries {dict(failures)}"
    )
