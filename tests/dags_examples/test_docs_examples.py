"""Issue 39: a rerun and a backfill of the docs' example chain (``docs_examples``) never hang.

``load_orders`` carries the day as its ``txn``; on a rerun the table has seen
it, so the task writes nothing and returns the version its earlier run
committed, and ``wait_for_orders`` (``after_version`` from that XCom) finds
``mark_late``'s commit after it at its first poke. Spark runs over the
session's Connect server (``spark_default`` is a ``spark_connect``
connection), so no task starts a JVM of its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pendulum
import pytest

from tests.airflow_env import AIRFLOW_HOME, run_dag, task_states, xcom

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"
DAYS = [pendulum.datetime(2026, 5, day, tz="UTC") for day in (1, 2, 3)]
#: A guard against a hang, far above a run's few seconds; not a measurement.
HANG = 300


@pytest.fixture
def connect_env(spark_connect, tmp_path, monkeypatch) -> Path:
    """``spark_default`` on the session's Connect server; the example's data in ``tmp_path``."""
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": spark_connect.port}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path))
    return tmp_path / "docs_examples" / "orders"


def _last_run_xcoms() -> dict:
    """The XComs of the newest run of docs_examples that the chain's assertions read
    (``airflow dags test`` of a logical date replaces the run that had it)."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        run = session.query(DagRun).filter_by(dag_id="docs_examples").order_by(DagRun.id.desc()).first()
    return {
        "load_orders": xcom(run, "load_orders", "version"),
        "mark_late": xcom(run, "mark_late", "version"),
        "wait_for_orders": xcom(run, "wait_for_orders"),
    }


def _airflow_dags_test(day: str) -> str:
    """``airflow dags test docs_examples <day>`` as a user runs it; its output."""
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", "docs_examples", day],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _backfill(dag) -> list[tuple[int, int, int]]:
    """The three days, one run each as a backfill makes them: (load's version, the
    sensor's baseline and version) per day."""
    results = []
    for day in DAYS:
        dag_run = run_dag(dag, logical_date=day)
        assert set(task_states(dag_run).values()) == {"success"}
        waited = xcom(dag_run, "wait_for_orders")
        results.append((xcom(dag_run, "load_orders", "version"), waited["baseline_version"], waited["version"]))
    return results


@pytest.mark.usefixtures("airflow_db")
def test_the_docs_chain_reruns_and_a_three_day_backfill_reruns_at_once(connect_env: Path) -> None:
    """The issue's report, then a backfill, on one table (one test, to keep
    ``make test`` short).

    ``airflow dags test docs_examples 2026-05-01`` run twice: the second run
    loads nothing and its sensor succeeds at its first poke, with the version
    of the first run's load. A successful run logs no error or warning about
    assets, although no DAG declares the table's asset (issue 39, point 4).
    Then days 1 to 3 (day 1 loaded already), and the same three days again: every
    task succeeds, each day's load reports the version that holds its rows, and
    each sensor succeeds at once with the version ``mark_late`` made after it.
    The seconds each pass took are printed (``-s``), for the record only.
    """
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable

    seconds: dict[str, float] = {}
    dag_file = AIRFLOW_HOME / "dags" / "docs_examples.py"
    shutil.copy(EXAMPLES / "docs_examples.py", dag_file)
    outputs, runs = [], []
    try:
        for name in ("dags test", "dags test rerun"):
            start = time.monotonic()
            outputs.append(_airflow_dags_test("2026-05-01"))
            seconds[name] = time.monotonic() - start
            runs.append(_last_run_xcoms())
    finally:
        dag_file.unlink()

    assert [r["load_orders"] for r in runs] == [0, 0]  # the rerun returns the version its first run committed
    assert [r["mark_late"] for r in runs] == [1, None]  # nothing left to mark on the rerun
    waited = [r["wait_for_orders"] for r in runs]
    assert [(w["baseline_version"], w["version"]) for w in waited] == [(0, 1), (0, 1)]
    assert "recorded txn 20260501 of 'orders-loader'" in outputs[1]
    for output in outputs:
        noisy = [line for line in output.splitlines() if re.search(r"\[(error|warning)", line) and "sset" in line]
        assert noisy == []

    dag = DagBag(dag_folder=str(EXAMPLES / "docs_examples.py")).dags["docs_examples"]
    passes = []
    for name in ("backfill", "backfill rerun"):
        start = time.monotonic()
        passes.append(_backfill(dag))
        seconds[name] = time.monotonic() - start
    print("docs_examples seconds:", {k: round(v, 1) for k, v in seconds.items()})

    assert passes[0] == [(0, 0, 1), (2, 2, 3), (4, 4, 5)]
    assert [load for load, _, _ in passes[1]] == [0, 2, 4]
    assert all(version > load for load, _, version in passes[1])
    table = DeltaTable(str(connect_env))
    assert table.version() == 5  # the reruns committed nothing
    assert sorted(r["status"] for r in table.to_pyarrow_table().to_pylist()) == ["late"] * 3 + ["open"] * 3
