"""Mixed concurrent writers: delta-spark and we append, update and merge into
one table at the same time, on the local filesystem (issue 23, item 4).

Writers run in lanes, all started together, each running its operations one
after the other: two delta-spark lanes (each its own Spark Connect session
on the shared ``delta_spark`` server, which runs them concurrently) and two
lanes of ours in this process (``execute`` on the shared ``spark``); one of
our lanes also runs our CLI in a process of its own, setting a table property
(which needs no Spark) between two of its operations. A writer that loses a race
with no logical conflict retries at the next version; one whose conflict
delta-spark's ``ConflictChecker`` would raise fails with that conflict and
is not retried. The table is at delta-spark's default isolation level,
``Serializable``: a blind append into a partition fails an UPDATE or MERGE
that read it.

Afterwards, whatever the interleaving was:

- the versions are 0..N with no gap, each a valid commit, and delta-spark's
  and our history list them all;
- every operation that reported success is in the log exactly once (ours at
  the version we reported), and no failed operation left a commit;
- every conflict, on either side, is one delta-spark's rules raise for that
  loser and the winning commit it names; every commit that retried past
  other commits (``readVersion`` < version - 1) had no conflict with any of
  them by those rules (so no update was lost on either side);
- delta-spark and we read the same rows, and they equal a serial replay of
  the committed operations in version order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_delta_provider.delta.errors import ConcurrentModificationError
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta_spark.concurrent_ops import (
    DELTA_SPARK,
    OURS,
    OURS_CLI,
    SEED,
    USER_METADATA,
    Op,
    conflict_family,
    delta_spark_winner,
    our_winner,
)
from tests.delta_spark.delta_log_commits import commit_versions, expected_conflict, read_commit

ROOT = Path(__file__).resolve().parents[2]


def _lanes() -> dict[str, list[Op]]:
    """Who runs what. Partitions are shared across sides so that updates and
    merges of one partition collide, and appends land among them."""
    fresh = iter(range(100, 10_000, 10))

    def rows(n: int, matched: tuple[int, ...] = ()) -> tuple[tuple[int, int], ...]:
        base = next(fresh)
        return tuple((i, 1) for i in matched) + tuple((base + j, base + j) for j in range(n))

    ds, us, cli = DELTA_SPARK, OURS, OURS_CLI
    return {
        "ds1": [
            Op("ds1-append-a", "append", ds, "a", rows(2)),
            Op("ds1-update-a", "update", ds, "a", k=1),
            Op("ds1-merge-b", "merge", ds, "b", rows(1, (3, 4))),
        ],
        "ds2": [
            Op("ds2-update-b", "update", ds, "b", k=3),
            Op("ds2-merge-a", "merge", ds, "a", rows(1, (0,))),
            Op("ds2-append-c", "append", ds, "c", rows(2)),
        ],
        "us1": [
            Op("us1-update-a", "update", us, "a", k=5),
            Op("us1-append-b", "append", us, "b", rows(2)),
            Op("us1-merge-c", "merge", us, "c", rows(1, (6, 7))),
        ],
        "us2": [
            Op("us2-merge-a", "merge", us, "a", rows(1, (1, 2))),
            Op("cli-alter", "alter", cli),
            Op("us2-update-b", "update", us, "b", k=7),
        ],
    }


@dataclass
class Outcome:
    op: Op
    version: int | None = None  # what our writer reported (delta-spark's: found in the log)
    conflict: str | None = None  # the conflict family, e.g. ConcurrentAppend
    winner: int | None = None  # the winning version the conflict names
    winner_name: str | None = None  # or the operation whose commit it names (delta-spark's)
    message: str = ""
    seconds: float = 0.0


def _cli(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "airflow_delta_provider.spark", *argv,
         "--spark-conf", "spark.sql.shuffle.partitions=2", "--spark-conf", "spark.ui.enabled=false"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def _run_lane(ops: list[Op], path: str, sources: Path, spark, connect_url: str, out: list[Outcome],
              start: threading.Barrier) -> None:  # fmt: skip
    from airflow_delta_provider.spark.cli import execute, parse_request

    session = _delta_spark_session(connect_url) if any(op.engine == DELTA_SPARK for op in ops) else None
    start.wait(timeout=120)
    try:
        for op in ops:
            outcome = Outcome(op)
            began = time.monotonic()
            if op.engine == DELTA_SPARK:
                session.conf.set(USER_METADATA, op.name)
                try:
                    session.sql(op.sql(f"delta.`{path}`", sources)).collect()
                except Exception as exc:  # a conflict, or a failure the test reports
                    outcome.message = str(exc)
                    outcome.conflict = conflict_family(outcome.message)
                    winner = delta_spark_winner(outcome.message)
                    if isinstance(winner, int):
                        outcome.winner = winner
                    else:
                        outcome.winner_name = winner
            elif op.engine == OURS:
                try:
                    outcome.version = execute(parse_request(op.argv(path, sources)), spark).version
                except ConcurrentModificationError as exc:
                    outcome.message = f"{type(exc).__name__}: {exc}"
                    outcome.conflict = conflict_family(type(exc).__name__)
                    outcome.winner = exc.winning_version
            else:
                done = _cli(op.argv(path, sources))
                if done.returncode == 0:
                    outcome.version = json.loads(done.stdout.strip().splitlines()[-1])["version"]
                else:
                    outcome.message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
                    outcome.conflict = conflict_family(outcome.message.split(":", 1)[0])
                    outcome.winner = our_winner(outcome.message)
            outcome.seconds = time.monotonic() - began
            out.append(outcome)
    finally:
        if session is not None:
            session.stop()


def _delta_spark_session(url: str):
    """A Connect session of its own on the delta-spark server."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(url).create()
    # delta-spark rebuilds each new snapshot's state in 50 tasks by default: slow on 2 cores.
    session.conf.set("spark.databricks.delta.snapshotPartitions", "2")
    return session


@pytest.fixture
def ds_session(delta_spark):
    """A delta-spark Connect session for one test (stopped after it)."""
    session = _delta_spark_session(delta_spark.server.url)
    yield session
    session.stop()


def _seed(session, path: str) -> int:
    """The table, created and filled by delta-spark; its version."""
    table = f"delta.`{path}`"
    session.sql(f"CREATE TABLE {table} (id BIGINT, p STRING, v BIGINT) USING delta PARTITIONED BY (p)").collect()
    values = ", ".join(f"({i}, '{p}', {v})" for i, (p, v) in SEED.items())
    session.sql(f"INSERT INTO {table} VALUES {values}").collect()
    return DeltaTable(path).latest_version()


def test_delta_spark_and_we_write_one_table_concurrently(delta_spark, ds_session, spark, tmp_path: Path) -> None:
    root = tmp_path / "table"
    path = str(root)
    sources = tmp_path / "sources"
    lanes = _lanes()
    for ops in lanes.values():
        for op in ops:
            op.write_source(sources)
    base = _seed(ds_session, path)

    results: dict[str, list[Outcome]] = {name: [] for name in lanes}
    start = threading.Barrier(len(lanes))
    threads = [
        threading.Thread(
            target=_run_lane,
            args=(ops, path, sources, spark, delta_spark.server.url, results[name], start),
            name=name,
        )
        for name, ops in lanes.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive(), f"lane {t.name} did not finish"
    outcomes = [o for name in lanes for o in results[name]]
    assert len(outcomes) == sum(len(ops) for ops in lanes.values()), "a lane stopped early"
    for o in outcomes:
        print(
            f"{o.op.name:14} {o.seconds:5.1f}s version={o.version} {o.conflict or ''} {o.winner or o.winner_name or ''}"
        )
    unexpected = [o for o in outcomes if o.message and o.conflict is None]
    assert not unexpected, f"failures that are no conflict: {[(o.op.name, o.message[:2000]) for o in unexpected]}"

    # Versions 0..N, each a valid commit, named by the operation that made it.
    versions = commit_versions(root)
    assert versions == list(range(versions[-1] + 1)), "versions must be contiguous"
    commits = {v: read_commit(root, v) for v in versions}
    by_name: dict[str, int] = {}
    for v in range(base + 1, versions[-1] + 1):
        name = commits[v].name
        assert name is not None, f"version {v} ({commits[v].operation}) names no operation"
        assert name not in by_name, f"{name} committed twice, at {by_name[name]} and {v}"
        by_name[name] = v
    ops = {o.op.name: o for o in outcomes}
    assert set(by_name) == {n for n, o in ops.items() if o.conflict is None}, "committed != succeeded"
    for name, o in ops.items():
        if o.version is not None:
            assert by_name[name] == o.version, f"{name} reported {o.version}, the log has it at {by_name[name]}"

    # Every conflict is delta-spark's for that loser and winner; every retry crossed no conflict.
    for o in outcomes:
        if o.conflict is None:
            continue
        if o.winner is None and o.winner_name is not None:
            o.winner = by_name.get(o.winner_name)
        assert o.winner is not None and base < o.winner <= versions[-1], f"{o.op.name}: no winner in {o.message}"
        assert expected_conflict(o.op.reads_partition, o.op.part, commits[o.winner]) == o.conflict, (
            f"{o.op.name} ({o.op.engine}) failed with {o.conflict} against version {o.winner} "
            f"({commits[o.winner].name}), which delta-spark's rules do not raise"
        )
    for name, v in by_name.items():
        op, read = ops[name].op, commits[v].read_version
        assert read is not None and read < v, f"{name} at {v} has readVersion {read}"
        for w in range(read + 1, v):
            assert expected_conflict(op.reads_partition, op.part, commits[w]) is None, (
                f"{name} ({op.engine}) committed at {v} over version {w} ({commits[w].name}), "
                f"which conflicts with it by delta-spark's rules"
            )

    # Both read the rows of a serial replay; both list every version.
    state = dict(SEED)
    for v in range(base + 1, versions[-1] + 1):
        ops[commits[v].name].op.apply(state)
    expected = sorted((i, p, v) for i, (p, v) in state.items())
    assert delta_spark.rows(path, order_by="id") == expected
    from airflow_delta_provider.spark.read.scan import scan

    ours = sorted(tuple(r) for r in scan(spark, DeltaTable(path).snapshot()).select("id", "p", "v").collect())
    assert ours == expected
    assert [h["version"] for h in delta_spark.history(path)] == versions
    assert sorted(h["version"] for h in DeltaTable(path).history()) == versions
    retried = sum(1 for v in by_name.values() if commits[v].read_version < v - 1)
    print(f"{len(by_name)} committed ({retried} after other commits), "
          f"{sum(1 for o in outcomes if o.conflict)} conflicts")  # fmt: skip


def test_delta_spark_commits_inside_our_transaction(delta_spark, ds_session, spark, tmp_path: Path,
                                                    monkeypatch) -> None:  # fmt: skip
    """delta-spark commits between our operation's read and its commit (run
    from inside our ``Transaction.commit``, so the race is certain), and our
    commit follows delta-spark's rules for that pair:

    - turning deletion vectors on does not fail an UPDATE, which changes no
      metadata (delta-spark's ``attemptToResolveMetadataConflicts``; we used
      to raise MetadataChangedError);
    - a blind append into the partition an update-only MERGE read fails it
      with ConcurrentAppendError (delta-spark's default ``Serializable``; we
      used to let it through, leaving rows no serial order gives);
    - any other property change fails an UPDATE with MetadataChangedError.
    """
    from airflow_delta_provider.delta.errors import ConcurrentAppendError, MetadataChangedError
    from airflow_delta_provider.delta.transaction.transaction import Transaction
    from airflow_delta_provider.spark.cli import execute, parse_request

    path = str(tmp_path / "table")
    sources = tmp_path / "sources"
    session = ds_session
    base = _seed(session, path)
    table = delta_spark.table(path)
    pending: list[str] = []
    original = Transaction.commit

    def commit_after_delta_spark(self, *args, **kwargs):
        while pending:
            session.sql(pending.pop(0)).collect()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit_after_delta_spark)
    update_a = Op("update-a", "update", OURS, "a", k=1)
    append_a = Op("append-a", "append", DELTA_SPARK, "a", ((50, 50),))
    merge_a = Op("merge-a", "merge", OURS, "a", ((0, 1),))
    update_b = Op("update-b", "update", OURS, "b", k=2)
    for op in (append_a, merge_a):
        op.write_source(sources)
    update_only = json.dumps([{"when": "matched", "update": {"v": "t.v + s.v"}}])

    pending.append(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    done = execute(parse_request(update_a.argv(path, sources)), spark)
    assert (done.version, read_commit(Path(path), done.version).read_version) == (base + 2, base)

    pending.append(append_a.sql(table, sources))
    argv = merge_a.argv(path, sources)
    argv[argv.index("--clauses") + 1] = update_only
    with pytest.raises(ConcurrentAppendError) as conflict:
        execute(parse_request(argv), spark)
    assert conflict.value.winning_version == base + 3

    pending.append(f"ALTER TABLE {table} SET TBLPROPERTIES ('concurrency.test' = 'x')")
    with pytest.raises(MetadataChangedError) as changed:
        execute(parse_request(update_b.argv(path, sources)), spark)
    assert changed.value.winning_version == base + 4
    assert commit_versions(Path(path)) == list(range(base + 5))

    state = dict(SEED)
    update_a.apply(state)
    append_a.apply(state)
    assert delta_spark.rows(path, order_by="id") == sorted((i, p, v) for i, (p, v) in state.items())
    assert delta_spark.detail(path)["properties"]["delta.enableDeletionVectors"] == "true"
