"""DeltaConvertOperator through dag.test(), with no Spark (its default
engine): a Hive-partitioned Parquet folder on local disk and on S3 (moto,
through an ``aws`` connection) becomes a table delta-rs reads; a folder that
is a Delta table already fails the task for good, and nothing is written."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.delta import DeltaConvertOperator
from tests.airflow_env import run_dag, task_states, xcom
from tests.operators.s3_connection import CONN_ID

DATA = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "amount": pa.array([10, 20, 30, 40], pa.int64())})
#: (folder, rows) of the partitioned folder
FILES = {"day=2026-01-01/region=eu": DATA.slice(0, 2), "day=2026-01-02/region=us": DATA.slice(2, 2)}


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _rows(uri: str, storage_options: dict[str, str] | None = None) -> list[dict]:
    from deltalake import DeltaTable as RsTable

    rows = RsTable(uri, storage_options=storage_options).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r["id"])


EXPECTED = [
    {"id": 1, "amount": 10, "day": dt.date(2026, 1, 1), "region": "eu"},
    {"id": 2, "amount": 20, "day": dt.date(2026, 1, 1), "region": "eu"},
    {"id": 3, "amount": 30, "day": dt.date(2026, 1, 2), "region": "us"},
    {"id": 4, "amount": 40, "day": dt.date(2026, 1, 2), "region": "us"},
]


def _dag(table: str, dag_id: str, **common):
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, default_args={"retries": 1}) as dag:
        DeltaConvertOperator(
            task_id="convert",
            table_path=table,
            partition_by={"day": "date", "region": "string"},
            table_properties={"delta.appendOnly": "{{ 'true' }}"},
            **common,
        )
    return dag


@pytest.mark.usefixtures("airflow_db")
def test_convert_a_local_folder_then_refuse_to_convert_it_again(tmp_path) -> None:
    for folder, rows in FILES.items():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "part-0.parquet").write_bytes(_parquet(rows))
    (tmp_path / "_SUCCESS").touch()

    first = run_dag(_dag(str(tmp_path), "delta_convert_local"))
    assert task_states(first) == {"convert": "success"}
    result = xcom(first, "convert")
    assert (result["version"], result["operation"], result["metrics"]) == (0, "CONVERT", {"numConvertedFiles": 2})
    assert DeltaTable(tmp_path).snapshot().configuration == {"delta.appendOnly": "true"}
    assert _rows(str(tmp_path)) == EXPECTED

    log = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    again = run_dag(_dag(str(tmp_path), "delta_convert_local_again"))
    assert task_states(again) == {"convert": "failed"}  # TableAlreadyExistsError: no retry
    assert sorted(p.name for p in (tmp_path / "_delta_log").iterdir()) == log


@pytest.mark.usefixtures("airflow_db")
def test_convert_a_folder_on_s3_through_a_connection(s3_connection) -> None:
    uri = s3_connection.uri("events")
    storage = DeltaTable(uri, s3_connection.storage_options).storage
    for folder, rows in FILES.items():
        storage.put(f"{folder}/part-0.parquet", _parquet(rows))
    storage.put("_SUCCESS", b"")

    dag_run = run_dag(_dag(uri, "delta_convert_s3", storage_conn_id=CONN_ID))
    assert task_states(dag_run) == {"convert": "success"}
    assert xcom(dag_run, "convert")["version"] == 0
    assert _rows(uri, s3_connection.storage_options) == EXPECTED


def test_the_spark_cli_converts_with_no_spark_session(tmp_path) -> None:
    for folder, rows in FILES.items():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "part-0.parquet").write_bytes(_parquet(rows))
    argv = [sys.executable, "-m", "airflow_delta_provider.spark", "convert", str(tmp_path),
            "--partition-by", "day date, region string", "--property", "delta.appendOnly=true"]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True, text=True)
    assert _rows(str(tmp_path)) == EXPECTED
    assert DeltaTable(tmp_path).history()[0]["operation"] == "CONVERT"
    bad = subprocess.run(argv, capture_output=True, text=True)
    assert bad.returncode != 0 and "TableAlreadyExistsError" in bad.stderr
