"""DeltaDescribeOperator and DeltaHistoryOperator through dag.test(), with no
Spark: on a local table and on S3 (moto) through an ``aws`` connection. Their
XComs are what the core computes, and agree with delta-rs's view of the table."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_info import detail
from airflow_delta_provider.operators.table_info import DeltaDescribeOperator, DeltaHistoryOperator
from tests.airflow_env import run_dag, task_states, xcom
from tests.operators.s3_connection import CONN_ID


def _three_versions(uri: str, storage_options: dict[str, str] | None = None) -> None:
    """Version 0 (create, partitioned), 1 (append), 2 (delete), by delta-rs."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    options = {**(storage_options or {}), "conditional_put": "etag"} if storage_options else None
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "a", "b"]})
    write_deltalake(uri, data, partition_by=["day"], name="orders", storage_options=options)
    write_deltalake(uri, data, mode="append", storage_options=options)
    RsTable(uri, storage_options=options).delete("id = 1")


def _dag(table: str, dag_id: str, **common):
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, default_args={"retries": 0}) as dag:
        DeltaDescribeOperator(task_id="describe", table_path=table, **common)
        DeltaDescribeOperator(task_id="describe_v0", table_path=table, version="{{ 1 - 1 }}", **common)
        DeltaHistoryOperator(task_id="last_two", table_path=table, limit=2, **common)
        DeltaHistoryOperator(task_id="range", table_path=table, start_version=0, end_version="{{ 1 }}", **common)
    return dag


def _check(dag_run, table: DeltaTable) -> None:
    assert set(task_states(dag_run).values()) == {"success"}
    described = xcom(dag_run, "describe")
    assert described == detail(table.snapshot())
    assert (described["version"], described["name"], described["partitionColumns"]) == (2, "orders", ["day"])
    assert described["numFiles"] == len(table.snapshot().files)
    assert [f["name"] for f in described["schema"]["fields"]] == ["id", "day"]
    assert described["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert xcom(dag_run, "describe_v0")["version"] == 0
    assert [(h["version"], h["operation"]) for h in xcom(dag_run, "last_two")] == [(2, "DELETE"), (1, "WRITE")]
    ranged = xcom(dag_run, "range")
    assert [(h["version"], h["operation"]) for h in ranged] == [(1, "WRITE"), (0, "WRITE")]
    assert ranged[0]["operationParameters"]["mode"] == "Append"


@pytest.mark.usefixtures("airflow_db")
def test_describe_and_history_of_a_local_table(tmp_path) -> None:
    _three_versions(str(tmp_path))
    _check(run_dag(_dag(str(tmp_path), "delta_table_info_local")), DeltaTable(tmp_path))


@pytest.mark.usefixtures("airflow_db")
def test_describe_and_history_on_s3_through_a_connection(s3_connection) -> None:
    uri = s3_connection.uri("orders")
    _three_versions(uri, s3_connection.storage_options)
    dag_run = run_dag(_dag(uri, "delta_table_info_s3", storage_conn_id=CONN_ID))
    _check(dag_run, DeltaTable(uri, s3_connection.storage_options))
    assert xcom(dag_run, "describe")["location"] == uri


@pytest.mark.usefixtures("airflow_db")
def test_bad_arguments_a_missing_table_or_version_fail_the_task(tmp_path) -> None:
    from airflow.sdk import DAG

    _three_versions(str(tmp_path))
    with DAG("delta_table_info_failures", schedule=None, default_args={"retries": 0}) as dag:
        DeltaDescribeOperator(task_id="missing", table_path=str(tmp_path / "nothing"))
        DeltaDescribeOperator(task_id="future_version", table_path=str(tmp_path), version=9)
        DeltaHistoryOperator(task_id="not_a_number", table_path=str(tmp_path), limit="{{ 'many' }}")
        DeltaHistoryOperator(task_id="backwards", table_path=str(tmp_path), start_version=2, end_version=1)
    states = task_states(run_dag(dag))
    assert states == dict.fromkeys(("missing", "future_version", "not_a_number", "backwards"), "failed")


def test_describe_refuses_a_version_and_a_timestamp() -> None:
    with pytest.raises(ValueError, match="not both"):
        DeltaDescribeOperator(task_id="both", table_path="/t", version=1, timestamp="2026-01-01")
