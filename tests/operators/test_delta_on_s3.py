"""A Delta pipeline on S3 (moto's server), through dag.test() and real spark-submit.

The store's credentials live only in an Airflow ``aws`` connection
(``storage_conn_id``): nothing in this process's environment names them. The
pip pyspark has no ``hadoop-aws``, so ``io="auto"`` takes the arrow path.
One DAG run checks the results with ``deltalake`` reading the same endpoint,
the sensor (poke and deferrable), and then searches for the connection's
secret everywhere it must never appear: the spark-submit command lines, the
task logs, the XComs, the commits and the serialized trigger.
"""

from __future__ import annotations

import json
import subprocess
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.delta import (
    DeltaAppendOperator,
    DeltaCheckpointOperator,
    DeltaDeleteOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor
from airflow_delta_provider.triggers.delta_table import DeltaTableVersionTrigger
from tests.airflow_env import SPARK_TEST_CONF, run_dag, task_states, xcom
from tests.operators.s3_connection import CONN_ID


@pytest.mark.usefixtures("airflow_db")
def test_pipeline_on_s3_through_a_connection_and_no_secret_leaks(s3_connection, tmp_path, monkeypatch, capfd):
    from airflow.models.trigger import Trigger
    from airflow.models.xcom import XComModel
    from airflow.sdk import DAG
    from airflow.utils.session import create_session
    from deltalake import DeltaTable as ReaderTable

    secret = s3_connection.secret
    table = s3_connection.uri("orders")
    source = tmp_path / "orders.parquet"
    pq.write_table(
        pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "amount": pa.array([10, 20, 30, 40], pa.int64())}), source
    )

    # Every spark-submit command line, as Popen receives it.
    argv_seen: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(args, *a, **kw):
        argv_seen.append([str(x) for x in args])
        return real_popen(args, *a, **kw)

    monkeypatch.setattr("airflow.providers.apache.spark.hooks.spark_submit.subprocess.Popen", spy)

    # A commit that arrives while the deferrable sensor waits in its trigger.
    trigger_started = threading.Event()
    original_run = DeltaTableVersionTrigger.run

    def run(self):
        trigger_started.set()
        return original_run(self)

    monkeypatch.setattr(DeltaTableVersionTrigger, "run", run)
    options = s3_connection.storage_options

    def commit_while_deferred():
        if trigger_started.wait(timeout=600):
            t = DeltaTable(table, options)
            txn = t.transaction("SET TBLPROPERTIES", snapshot=t.snapshot(), isolation_level="SnapshotIsolation")
            txn.commit(metrics={})

    common = {"conf": SPARK_TEST_CONF, "storage_conn_id": CONN_ID}
    with DAG("delta_on_s3", schedule=None, default_args={"retries": 0}) as dag:
        load = DeltaAppendOperator(task_id="load", table_path=table, source=str(source), **common)
        update = DeltaUpdateOperator(
            task_id="update", table_path=table, updates={"amount": "amount * 10"}, condition="id >= 3", **common
        )
        delete = DeltaDeleteOperator(task_id="delete", table_path=table, condition="id = 1", **common)
        seen = DeltaTableVersionSensor(
            task_id="seen", table_path=table, after_version=0, storage_conn_id=CONN_ID, poke_interval=0.1, timeout=60
        )
        wait = DeltaTableVersionSensor(
            task_id="wait",
            table_path=table,
            after_version="{{ ti.xcom_pull(task_ids='delete')['version'] }}",
            storage_conn_id=CONN_ID,
            data_changes_only=False,  # the commit it waits for is metadata-only
            deferrable=True,
            poke_interval=0.1,
            timeout=600,
        )
        checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table_path=table, **common)
        vacuum = DeltaVacuumOperator(
            task_id="vacuum", table_path=table, retention_hours=0, retention_check=False, **common
        )
        load >> update >> delete >> seen >> wait >> checkpoint >> vacuum

    writer = threading.Thread(target=commit_while_deferred, daemon=True)
    writer.start()
    dag_run = run_dag(dag)
    writer.join(timeout=60)
    out, err = capfd.readouterr()

    assert task_states(dag_run) == {
        t: "success" for t in ("load", "update", "delete", "seen", "wait", "checkpoint", "vacuum")
    }
    assert (
        xcom(dag_run, "load")["version"],
        xcom(dag_run, "update")["version"],
        xcom(dag_run, "delete")["version"],
    ) == (0, 1, 2)
    assert xcom(dag_run, "update")["metrics"]["numUpdatedRows"] == 2
    assert xcom(dag_run, "seen")["version"] == 2
    assert (xcom(dag_run, "wait")["version"], xcom(dag_run, "wait")["baseline_version"]) == (3, 2)
    assert xcom(dag_run, "checkpoint")["version"] == 3
    vacuumed = xcom(dag_run, "vacuum")
    assert vacuumed["operation"] == "VACUUM END" and vacuumed["metrics"]["numDeletedFiles"] >= 2

    reader = ReaderTable(table, storage_options=options)
    assert sorted(reader.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "amount": 20},
        {"id": 3, "amount": 300},
        {"id": 4, "amount": 400},
    ]
    assert DeltaTable(table, options).log_store.exists(f"{3:020d}.checkpoint.parquet")

    # --- the secret, nowhere it must not be ------------------------------------------
    assert len(argv_seen) == 5  # load, update, delete, checkpoint, vacuum: each spark-submit was seen
    assert not [argv for argv in argv_seen if any(secret in arg for arg in argv)], "secret on a command line"
    assert f"UPDATE: version 1 of {table}" in out + err  # the task logs were captured
    assert secret not in out and secret not in err, "secret in the task logs"
    with create_session() as session:
        xcoms = session.query(XComModel).filter(XComModel.run_id == dag_run.run_id).all()
        assert len(xcoms) >= 7
        assert all(secret not in json.dumps(x.value, default=str) for x in xcoms), "secret in an XCom"
        triggers = session.query(Trigger).all()
        assert all(secret not in json.dumps(t.kwargs, default=str) for t in triggers), "secret in a stored trigger"
    serialized = DeltaTableVersionTrigger(table, 2, storage_conn_id=CONN_ID).serialize()
    assert secret not in json.dumps(serialized) and serialized[1]["storage_conn_id"] == CONN_ID
    log = DeltaTable(table, options).log_store
    for f in log.list_from(0):
        if f.kind == "commit":
            assert secret not in log.read(f.name).decode(), f"secret in commit {f.version}"
