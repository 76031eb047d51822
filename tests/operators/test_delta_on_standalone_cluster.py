"""An operator against a real Spark standalone cluster (client deploy mode).

The test starts a master and one worker (1 core, 1g) on 127.0.0.1 with
``spark-class`` from the pyspark install, and stops both at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.hooks.delta_spark import application_path
from airflow_delta_provider.operators.delta import DeltaAppendOperator
from tests.airflow_env import SPARK_TEST_CONF, run_dag, task_states, xcom

pytestmark = pytest.mark.skipif(
    not Path(application_path()).is_file(), reason="the Spark CLI is not there yet"
)

STARTUP_LIMIT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(spark_home: Path, args: list[str], log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    return subprocess.Popen(
        [str(spark_home / "bin" / "spark-class"), *args],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group, stopped as one below
    )


def _wait_for(log: Path, text: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while text not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"waiting for {text!r}; {log.name} says:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def standalone_master(tmp_path: Path) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a running master with one registered worker."""
    pyspark = pytest.importorskip("pyspark")
    spark_home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    master = _start(
        spark_home,
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(_free_port())],
        master_log,
    )  # fmt: skip
    worker = None
    try:
        _wait_for(master_log, "I have been elected leader", master)
        worker = _start(
            spark_home,
            ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
             "--webui-port", str(_free_port()), "--work-dir", str(tmp_path / "work"), master_url],
            worker_log,
        )  # fmt: skip
        _wait_for(master_log, "Registering worker", master)
        yield master_url
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


@pytest.mark.usefixtures("airflow_db")
def test_append_on_a_standalone_cluster_in_client_mode(
    standalone_master: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import DAG
    from deltalake import DeltaTable as ReaderTable

    host, port = standalone_master.rsplit(":", 1)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_STANDALONE",
        json.dumps({"conn_type": "spark", "host": host, "port": int(port), "extra": {"deploy-mode": "client"}}),
    )
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), source)
    table = tmp_path / "table"

    with DAG("delta_on_standalone", schedule=None) as dag:
        DeltaAppendOperator(
            task_id="append",
            conn_id="spark_standalone",
            table_path=str(table),
            source=str(source),
            conf={**SPARK_TEST_CONF, "spark.pyspark.python": sys.executable, "spark.cores.max": "1"},
            executor_memory="512m",
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"append": "success"}
    assert xcom(dag_run, "append", key="version") == 0
    assert xcom(dag_run, "append")["metrics"]["numOutputRows"] == 10
    assert sorted(ReaderTable(str(table)).to_pyarrow_table()["id"].to_pylist()) == list(range(10))
