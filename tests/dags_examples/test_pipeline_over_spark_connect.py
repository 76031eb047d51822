"""The example pipeline, unchanged, over Spark Connect: ``spark_default`` is a
``spark_connect`` connection to the session's server, so every step runs in
the task's own process as a Connect client. delta-rs checks the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.airflow_env import run_dag, task_states, xcom

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"
STEPS = ("load_day_1", "append_day_2", "upsert_day_3", "flag_large_orders", "drop_cancelled", "checkpoint")


@pytest.mark.usefixtures("airflow_db")
def test_the_example_pipeline_runs_over_spark_connect(spark_connect, tmp_path, monkeypatch) -> None:
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable

    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path / "data"))
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": spark_connect.port}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    dag = DagBag(dag_folder=str(EXAMPLES / "delta_pipeline.py")).dags["delta_pipeline"]
    dag_run = run_dag(dag)

    assert set(task_states(dag_run).values()) == {"success"}
    versions = {step: xcom(dag_run, step)["version"] for step in STEPS}
    assert versions == {
        "load_day_1": 0,
        "append_day_2": 1,
        "upsert_day_3": 2,
        "flag_large_orders": 3,
        "drop_cancelled": 4,
        "checkpoint": 4,
    }
    assert xcom(dag_run, "vacuum_dry_run")["version"] is None
    table = DeltaTable(str(tmp_path / "data" / "delta" / "orders"))
    assert table.version() == 4
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["order_id"])
    assert [(r["order_id"], r["status"], r["country"]) for r in rows] == [
        (1, "open", None), (2, "priority", "NL"), (5, "priority", "NL"), (7, "open", "DE"),
    ]  # fmt: skip
    history = {h["version"]: h["operation"] for h in table.history()}
    assert [history[v] for v in range(5)] == ["WRITE", "WRITE", "MERGE", "UPDATE", "DELETE"]
