"""delta_asset_events: a DAG scheduled by the table itself.

An asset watcher runs :class:`DeltaTableEventTrigger` in the triggerer. It
polls ``_delta_log`` and, when a poll finds new versions that change data,
emits one asset event listing them (``extra["payload"]["versions"]``); an
OPTIMIZE or a VACUUM schedules nothing. It needs a running triggerer and
scheduler (``airflow standalone``), and fires only while this DAG is
unpaused.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")

orders = Asset(
    name="delta_orders",
    uri=Path(TABLE).as_uri(),
    watchers=[
        AssetWatcher(
            name="delta_orders_new_version",
            trigger=DeltaTableEventTrigger(table_path=TABLE, poll_interval=30),
        )
    ],
)

with DAG(
    dag_id="delta_asset_events",
    description="Runs when new versions of the orders table change data (event-driven scheduling)",
    schedule=[orders],
    catchup=False,
    tags=["delta", "example"],
) as dag:

    @task
    def summarise_new_version(triggering_asset_events=None) -> list[dict]:
        """Print the versions whose events triggered this run."""
        extras = [dict(event.extra) for event in triggering_asset_events[orders]]
        for extra in extras:
            print(f"orders changed: {extra}")
        return extras

    summarise_new_version()
