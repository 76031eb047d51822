"""DeltaCloneOperator through dag.test(), with no Spark (its default engine):
a local clone at a templated version that delta-rs reads, refused when the
target exists (nothing written) and replaced with ``replace``; and a clone
from one S3 bucket into another through one ``aws`` connection."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.delta import DeltaCloneOperator
from tests.airflow_env import run_dag, task_states, xcom
from tests.delta.conftest import create_table, read_snapshot, write_data_file
from tests.operations.dml.dml_support import rows_rs
from tests.operators.s3_connection import CONN_ID

SCHEMA = pa.schema([("id", pa.int64())])


def _dag(table: str, source: str, dag_id: str, **arguments):
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, default_args={"retries": 1}) as dag:
        DeltaCloneOperator(task_id="clone", table_path=table, source_path=source, **arguments)
    return dag


def _source(uri: str) -> None:
    """v0 [1, 2] / v1 +[3]."""
    create_table(uri, SCHEMA, adds=[write_data_file(uri, pa.table({"id": pa.array([1, 2], pa.int64())}))])
    table = DeltaTable(uri)
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(write_data_file(uri, pa.table({"id": pa.array([3], pa.int64())})))
    txn.commit(metrics={"numFiles": 1})


def _ids(uri: str, storage_options: dict[str, str] | None = None) -> list[int]:
    return sorted(read_snapshot(DeltaTable(uri, storage_options).snapshot()).column("id").to_pylist())


@pytest.mark.usefixtures("airflow_db")
def test_clone_a_version_then_refuse_then_replace(tmp_path) -> None:
    source, clone = str(tmp_path / "source"), str(tmp_path / "clone")
    _source(source)

    first = run_dag(_dag(clone, source, "delta_clone_local", version="{{ 2 - 2 }}"))
    assert task_states(first) == {"clone": "success"}
    result = xcom(first, "clone")
    assert (result["version"], result["operation"]) == (0, "CLONE")
    assert (result["metrics"]["sourceNumOfFiles"], result["metrics"]["numCopiedFiles"]) == (1, 0)
    assert [r[0] for r in rows_rs(clone)] == [1, 2]

    log = sorted(p.name for p in (tmp_path / "clone" / "_delta_log").iterdir())
    again = run_dag(_dag(clone, source, "delta_clone_local_again"))
    assert task_states(again) == {"clone": "failed"}  # TableAlreadyExistsError: no retry
    assert sorted(p.name for p in (tmp_path / "clone" / "_delta_log").iterdir()) == log

    replaced = run_dag(_dag(clone, source, "delta_clone_local_replace", replace=True))
    assert task_states(replaced) == {"clone": "success"}
    assert xcom(replaced, "clone")["version"] == 1
    assert [r[0] for r in rows_rs(clone)] == [1, 2, 3]
    assert not list((tmp_path / "clone").glob("*.parquet"))  # no data file copied


@pytest.mark.usefixtures("airflow_db")
def test_clone_across_two_buckets_through_one_connection(s3_connection, moto_server, monkeypatch) -> None:
    source = s3_connection.uri("orders")
    with monkeypatch.context() as env:  # the core's test helpers reach the store by environment
        for key, value in s3_connection.env.items():
            env.setenv(key, value)
        _source(source)
    clone = f"s3://{moto_server.create_bucket()}/orders_dev"

    dag_run = run_dag(_dag(clone, source, "delta_clone_s3", storage_conn_id=CONN_ID))

    assert task_states(dag_run) == {"clone": "success"}
    assert xcom(dag_run, "clone")["version"] == 0
    assert _ids(clone, s3_connection.storage_options) == [1, 2, 3]
    files = DeltaTable(clone, s3_connection.storage_options).snapshot().files
    assert all(f.path.startswith(f"s3://{s3_connection.bucket}/orders/") for f in files)
