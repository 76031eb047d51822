"""delta_s3_pipeline: the orders pipeline on a table in S3.

The table's credentials come from an Airflow ``aws`` connection
(``storage_conn_id``); without one, each side uses the cloud's own chain
(environment, instance profile). With the pip ``pyspark``, which has no
``hadoop-aws``, ``io="auto"`` reads and writes the data files through pyarrow
on the executors; a cluster with the connector uses it instead.

Set ``DELTA_S3_TABLE`` (``s3://bucket/path``), ``DELTA_S3_LANDING`` (where the
daily parquet files arrive) and an ``aws`` connection named by
``DELTA_S3_CONN_ID`` (default ``aws_lake``), for example::

    export AIRFLOW_CONN_AWS_LAKE='{"conn_type": "aws", "login": "...", "password": "...",
      "extra": {"region_name": "eu-west-1"}}'
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_delta_provider.operators.delta import (
    DeltaAppendOperator,
    DeltaCheckpointOperator,
    DeltaDeleteOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

TABLE = os.environ.get("DELTA_S3_TABLE", "s3://my-lake/delta/orders")
LANDING = os.environ.get("DELTA_S3_LANDING", "s3://my-lake/landing/orders")
CONN_ID = os.environ.get("DELTA_S3_CONN_ID", "aws_lake")

with DAG(
    dag_id="delta_s3_pipeline",
    description="Load, fix and tidy a Delta table on S3, credentials from an Airflow connection",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["delta", "s3"],
    default_args={"storage_conn_id": CONN_ID, "table_path": TABLE},
) as dag:
    load = DeltaAppendOperator(
        task_id="load",
        source=LANDING + "/{{ ds }}",
        source_format="parquet",
        merge_schema=True,
    )
    flag_large = DeltaUpdateOperator(
        task_id="flag_large_orders", updates={"priority": "'high'"}, condition="amount > 1000"
    )
    drop_cancelled = DeltaDeleteOperator(task_id="drop_cancelled", condition="status = 'cancelled'")
    changed = DeltaTableVersionSensor(
        task_id="changed",
        table_path=TABLE,
        after_version="{{ ti.xcom_pull(task_ids='load', key='version') }}",
        storage_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=30,
    )
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint", cleanup_logs=True)
    vacuum = DeltaVacuumOperator(task_id="vacuum")
    load >> flag_large >> drop_cancelled >> changed >> checkpoint >> vacuum
