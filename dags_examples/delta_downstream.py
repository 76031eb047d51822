"""delta_downstream: process only what changed in the orders table since the last run.

``wait_for_new_version`` is deferrable: it waits in the triggerer, not in a
worker slot, for a version after the last one this DAG processed, and
succeeds with the table's latest version. ``read_changes`` then writes the
change data feed of exactly the versions in between (inserts, deletes,
update pre- and post-images) to a folder of its own and returns the rows per
change type; ``remember_version`` records the last version read in the
Airflow Variable :data:`LAST_VERSION`, where the next run starts from.

The orders table records its changes because ``delta_pipeline`` creates it
with ``delta.enableChangeDataFeed``. Run delta_pipeline (or any writer),
then this DAG: the first run reads every change from version 0; each later
run reads only the versions committed since.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow.sdk import DAG, Variable, task

from airflow_delta_provider.operators.delta import DeltaChangesOperator
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
#: The Airflow Variable holding the last version processed (-1: none yet).
LAST_VERSION = "delta_downstream.orders.last_version"
SEEN = "ti.xcom_pull(task_ids='wait_for_new_version')['version']"

with DAG(
    dag_id="delta_downstream",
    description="Process the changes of a Delta table since the last run (change data feed)",
    schedule=None,
    catchup=False,
    max_active_runs=1,  # each run starts where the one before stopped
    tags=["delta", "example"],
) as dag:
    wait_for_new_version = DeltaTableVersionSensor(
        task_id="wait_for_new_version",
        table_path=TABLE,
        after_version=f"{{{{ var.value.get('{LAST_VERSION}', -1) }}}}",
        wait_for_creation=True,
        deferrable=True,
        poke_interval=10,
        timeout=timedelta(hours=1).total_seconds(),
    )

    read_changes = DeltaChangesOperator(
        task_id="read_changes",
        table_path=TABLE,
        start_version=f"{{{{ var.value.get('{LAST_VERSION}', -1) | int + 1 }}}}",
        end_version=f"{{{{ {SEEN} }}}}",
        output_path=str(DATA / "changes" / "orders") + f"/up-to-{{{{ {SEEN} }}}}",
        conf={"spark.ui.enabled": "false"},
    )

    @task
    def remember_version(ti=None) -> int:
        done = ti.xcom_pull(task_ids="read_changes")
        print(f"versions {done['metrics']['startVersion']} to {done['version']}: {done['metrics']['changes']}")
        Variable.set(LAST_VERSION, str(done["version"]))
        return done["version"]

    wait_for_new_version >> read_changes >> remember_version()
