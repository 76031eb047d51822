"""DeltaConvertOperator through dag.test(), with no Spark (its default
engine): a Hive-partitioned Parquet folder on local disk and on S3 (moto,
through an ``aws`` connection) becomes a table delta-rs reads; a folder that
is a Delta table already fails the task for good, and nothing is written."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.delta import DeltaConvertOperator
from tests.airflow_env import run_dag, task_states, xcom
from tests.operators.s3_connection import CONN_ID
from tests.parquet_folders import EXPECTED, FILES, parquet_bytes, rows_by_delta_rs, write_folder


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
    write_folder(tmp_path)
    (tmp_path / "_SUCCESS").touch()

    first = run_dag(_dag(str(tmp_path), "delta_convert_local"))
    assert task_states(first) == {"convert": "success"}
    result = xcom(first, "convert")
    assert (result["version"], result["operation"], result["metrics"]) == (0, "CONVERT", {"numConvertedFiles": 2})
    assert DeltaTable(tmp_path).snapshot().configuration == {"delta.appendOnly": "true"}
    assert rows_by_delta_rs(str(tmp_path)) == EXPECTED

    log = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    again = run_dag(_dag(str(tmp_path), "delta_convert_local_again"))
    assert task_states(again) == {"convert": "failed"}  # TableAlreadyExistsError: no retry
    assert sorted(p.name for p in (tmp_path / "_delta_log").iterdir()) == log


@pytest.mark.usefixtures("airflow_db")
def test_convert_a_folder_on_s3_through_a_connection(s3_connection) -> None:
    uri = s3_connection.uri("events")
    storage = DeltaTable(uri, s3_connection.storage_options).storage
    for folder, rows in FILES.items():
        storage.put(f"{folder}/part-0.parquet", parquet_bytes(rows))
    storage.put("_SUCCESS", b"")

    dag_run = run_dag(_dag(uri, "delta_convert_s3", storage_conn_id=CONN_ID))
    assert task_states(dag_run) == {"convert": "success"}
    assert xcom(dag_run, "convert")["version"] == 0
    assert rows_by_delta_rs(uri, s3_connection.storage_options) == EXPECTED
