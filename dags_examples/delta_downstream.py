"""delta_downstream: wait for a new version of the orders table, then act on it.

``wait_for_new_version`` is deferrable: it waits in the triggerer, not in a
worker slot, and succeeds with the table's latest version. The downstream
Spark step then checkpoints the table at that version, so readers of the new
version replay a short log.

Start it, then run delta_pipeline (or any writer): the sensor fires on the
first commit after its first look at the table.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_delta_provider.operators.delta import DeltaCheckpointOperator
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")

with DAG(
    dag_id="delta_downstream",
    description="Wait for a new Delta table version (deferrable), then run a Spark step on it",
    schedule=None,
    catchup=False,
    tags=["delta", "example"],
) as dag:
    wait_for_new_version = DeltaTableVersionSensor(
        task_id="wait_for_new_version",
        table_path=TABLE,
        wait_for_creation=True,
        deferrable=True,
        poke_interval=10,
        timeout=timedelta(hours=1).total_seconds(),
    )

    checkpoint_new_version = DeltaCheckpointOperator(
        task_id="checkpoint_new_version",
        table_path=TABLE,
        conf={"spark.ui.enabled": "false"},
    )

    @task
    def announce(ti=None) -> None:
        seen = ti.xcom_pull(task_ids="wait_for_new_version")
        done = ti.xcom_pull(task_ids="checkpoint_new_version")
        print(f"{seen['operation']} made version {seen['version']}; checkpointed version {done['version']}")

    wait_for_new_version >> checkpoint_new_version >> announce()
