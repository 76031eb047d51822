"""DeltaGenerateManifestOperator through dag.test(), with no Spark (its
default engine): on S3 (moto, through an ``aws`` connection) it writes the
manifests delta-rs's files agree with, returns the version they reflect and
emits no asset event (it commits nothing); a table with deletion vectors
fails the task for good, and nothing is written."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from airflow_delta_provider.operators.delta import DeltaGenerateManifestOperator
from tests.airflow_env import run_dag, task_states, xcom
from tests.operators.s3_connection import CONN_ID
from tests.symlink_manifests import INLINE_DV, current, delta_rs_manifests


def _dag(table: str, dag_id: str, **common):
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, default_args={"retries": 1}) as dag:
        DeltaGenerateManifestOperator(task_id="generate", table_path=table, **common)
    return dag


@pytest.mark.usefixtures("airflow_db")
def test_generate_the_manifests_of_a_table_on_s3(s3_connection) -> None:
    from deltalake import write_deltalake

    uri = s3_connection.uri("orders")
    options = s3_connection.storage_options
    for day in ("2026-01-01", "2026-01-02"):
        write_deltalake(uri, pa.table({"id": [1, 2], "day": [day, day]}), mode="append", partition_by=["day"],
                        storage_options=options)  # fmt: skip

    dag_run = run_dag(_dag(uri, "delta_generate_s3", storage_conn_id=CONN_ID))

    assert task_states(dag_run) == {"generate": "success"}
    result = xcom(dag_run, "generate")
    assert (result["version"], result["operation"]) == (1, "GENERATE")
    assert result["metrics"] == {"numManifestsWritten": 2, "numManifestsDeleted": 0}
    assert sorted(current(uri, options)) == ["day=2026-01-01", "day=2026-01-02"]
    assert current(uri, options) == delta_rs_manifests(uri, options)
    assert DeltaGenerateManifestOperator(task_id="g", table_path=uri).outlets == []  # commits nothing


@pytest.mark.usefixtures("airflow_db")
def test_a_table_with_deletion_vectors_fails_the_task_for_good(tmp_path) -> None:
    from tests.delta.conftest import create_table, write_data_file

    table = str(tmp_path)
    add = write_data_file(table, pa.table({"id": [1, 2]}))
    create_table(table, pa.schema([("id", pa.int64())]), (), {"delta.enableDeletionVectors": "true"},
                 [dataclasses.replace(add, deletion_vector=INLINE_DV)])  # fmt: skip

    dag_run = run_dag(_dag(table, "delta_generate_dv"))

    assert task_states(dag_run) == {"generate": "failed"}  # SymlinkManifestUnsupportedError: no retry
    assert not (tmp_path / "_symlink_format_manifest").exists()
