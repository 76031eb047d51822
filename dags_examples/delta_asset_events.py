"""delta_asset_events: a DAG scheduled by the table itself, that misses no version.

An asset watcher runs :class:`DeltaTableEventTrigger` in the triggerer. It
polls ``_delta_log`` and, when a poll finds new versions that change data,
emits one asset event listing them (``extra["payload"]["versions"]``); an
OPTIMIZE or a VACUUM schedules nothing. The writing operators
(``delta_pipeline``) emit events on the same asset.

The events only wake this DAG. What a run processes comes from
:func:`~airflow_delta_provider.assets.version_range`: every version after
the last one this DAG recorded in the asset's state store, up to the table's
newest. A version whose event reached no run (Airflow 3.3 can leave an event
out of every run: apache/airflow#56050) is processed by the next run, and a
run whose versions an earlier one already processed does nothing.
``max_active_runs=1`` makes each run read what the one before recorded.

It needs a running triggerer and scheduler (``airflow standalone``), and
fires only while this DAG is unpaused.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_delta_provider.assets import processed_version, record_processed, version_range
from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
#: This consumer's name in the asset's state store.
CONSUMER = "delta_asset_events"

orders = Asset(
    name="delta_orders",
    uri=Path(TABLE).as_uri(),  # table_asset_uri(TABLE) for a local path, without loading lineage code at parse
    watchers=[
        AssetWatcher(
            name="delta_orders_new_version",
            trigger=DeltaTableEventTrigger(table_path=TABLE, poll_interval=30),
        )
    ],
)

with DAG(
    dag_id="delta_asset_events",
    description="Runs when new versions of the orders table change data, and processes each version once",
    schedule=[orders],
    max_active_runs=1,  # each run starts where the one before stopped
    catchup=False,
    tags=["delta", "example"],
) as dag:

    @task(inlets=[orders])
    def versions_to_process(triggering_asset_events=None, asset_state_store=None):
        """The versions after the last one processed, up to the table's newest (None: nothing new)."""
        done = processed_version(asset_state_store[orders], CONSUMER)
        return version_range(triggering_asset_events, done, table_path=TABLE, asset=orders)

    @task(inlets=[orders])
    def summarise(todo, asset_state_store=None) -> list[dict]:
        """Print what each version did, then record the range as processed."""
        if todo is None:
            print("orders: nothing new since the last run")
            return []
        from airflow_delta_provider.delta.log.version_probe import VersionProbe

        commits = VersionProbe(TABLE).commits(todo["start_version"], todo["end_version"])
        summary = [{"version": c.version, "operation": c.info.operation} for c in commits]
        for line in summary:
            print(f"orders changed: {line}")
        record_processed(asset_state_store[orders], CONSUMER, todo)
        return summary

    summarise(versions_to_process())
