"""delta_downstream: process only what changed in the orders table since the last run.

Scheduled on the orders table's asset, whatever its name (``delta_asset_events``
names it and watches it; the writing operators of ``delta_pipeline`` emit
events on it). ``versions_to_process`` asks
:func:`~airflow_delta_provider.assets.version_range` for the versions after
the last one this DAG processed, kept in the asset's state store, up to the
table's newest. ``read_changes`` writes their change data feed (inserts,
deletes, update pre- and post-images) to a folder of its own, or nothing at
all when nothing is new; ``remember_version`` then records the range as
processed. An event that reached no run loses nothing: the next run's range
covers its versions. ``max_active_runs=1``: a version is never processed twice.

The orders table records its changes because ``delta_pipeline`` creates it
with ``delta.enableChangeDataFeed``. Run delta_pipeline (or any writer),
then this DAG (``airflow dags test delta_downstream``: a run with no event
works the same): the first run reads every change from version 0; each later
run reads only the versions committed since.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG, Asset, task

from airflow_delta_provider.assets import processed_version, record_processed, version_range
from airflow_delta_provider.operators.delta import DeltaChangesOperator

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
#: The table's asset, by URI: the one the writing operators and delta_asset_events use.
ORDERS = Asset.ref(uri=Path(TABLE).as_uri())
#: This consumer's name in the asset's state store.
CONSUMER = "delta_downstream"
#: The last version of this run's range (a template expression; None when nothing is new).
END = "(ti.xcom_pull(task_ids='versions_to_process') or {}).get('end_version')"

with DAG(
    dag_id="delta_downstream",
    description="Process the changes of a Delta table since the last run (change data feed)",
    schedule=[ORDERS],
    catchup=False,
    max_active_runs=1,  # each run starts where the one before stopped
    tags=["delta", "example"],
) as dag:

    @task(inlets=[ORDERS])
    def versions_to_process(triggering_asset_events=None, asset_state_store=None):
        done = processed_version(asset_state_store[ORDERS], CONSUMER)
        return version_range(triggering_asset_events, done, table_path=TABLE, asset=ORDERS)

    todo = versions_to_process()

    read_changes = DeltaChangesOperator(
        task_id="read_changes",
        table_path=TABLE,
        version_range=todo,
        output_path=str(DATA / "changes" / "orders") + f"/up-to-{{{{ {END} }}}}",
        conf={"spark.ui.enabled": "false"},
    )

    @task(inlets=[ORDERS])
    def remember_version(todo, done, asset_state_store=None):
        if todo is None:
            print("nothing new since the last run")
            return None
        print(f"versions {todo['start_version']} to {todo['end_version']}: {done['metrics']['changes']}")
        return record_processed(asset_state_store[ORDERS], CONSUMER, todo)

    remember_version(todo, read_changes.output)
