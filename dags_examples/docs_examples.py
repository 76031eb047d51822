"""docs_examples: the docs' own example chain, safe to rerun and to backfill.

The tasks are the examples of ``docs/operators.rst`` and
``docs/sensors-and-triggers.rst`` as printed, but for the paths:

1. ``land_orders`` writes the day's orders as CSV into the landing folder;
2. ``load_orders`` appends them, with the day as its ``txn`` version;
3. ``mark_late`` marks the unshipped old orders late (those not late yet, so
   that a rerun has nothing to change);
4. ``wait_for_orders`` waits for a version after the one ``load_orders``
   committed.

A rerun of a day (``airflow dags test docs_examples 2026-05-01`` twice) or
of a whole backfill finishes at once: ``load_orders`` writes nothing, because
the table has seen its ``txn``, and returns the version its earlier run
committed; the sensor finds the commit ``mark_late`` made after it. Where
``mark_late`` finds nothing to change, its ``version`` is None and a sensor
given that succeeds at once (``docs/sensors-and-triggers.rst``).

The table lives in ``$DELTA_DEMO_DATA/docs_examples/orders`` (default ``<repo>/data``).
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_delta_provider.operators.delta import DeltaAppendOperator, DeltaUpdateOperator
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data") / "docs_examples"
TABLE = str(DATA / "orders")
LANDING = DATA / "landing" / "orders"

with DAG(
    dag_id="docs_examples",
    description="The docs' example chain: load a day (idempotent by txn), mark late orders, wait for the version",
    schedule="@daily",
    catchup=False,
    default_args={"conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}},
    tags=["delta", "example"],
) as dag:

    @task
    def land_orders(ds=None) -> str:
        """The day's orders as a CSV file, as an upstream system would land them."""
        folder = LANDING / ds
        folder.mkdir(parents=True, exist_ok=True)
        day = int(ds.replace("-", ""))
        (folder / "orders.csv").write_text(
            "order_id,country,status,amount,penalty,shipped_at,ordered_at\n"
            f"{day}1,NL,open,40.0,0.0,,2024-05-01\n"
            f"{day}2,FR,open,90.0,0.0,2024-05-03,2024-05-02\n"
        )
        return str(folder)

    load = DeltaAppendOperator(
        task_id="load_orders",
        table_path=TABLE,
        source=str(LANDING) + "/{{ ds }}/",
        source_format="csv",
        options={"header": "true", "inferSchema": "true"},
        partition_by=["country"],
        merge_schema=True,
        txn_app_id="orders-loader",
        txn_version="{{ logical_date.strftime('%Y%m%d') | int }}",
    )
    mark_late = DeltaUpdateOperator(
        task_id="mark_late",
        table_path=TABLE,
        updates={"status": "'late'", "penalty": "amount * 0.05"},
        condition="status <> 'late' AND shipped_at IS NULL AND ordered_at < date'2024-06-01'",
    )
    wait = DeltaTableVersionSensor(
        task_id="wait_for_orders",
        table_path=TABLE,
        after_version="{{ ti.xcom_pull(task_ids='load_orders', key='version') }}",
        deferrable=True,
        poke_interval=30,
        timeout=6 * 3600,
    )

    land_orders() >> load >> mark_late >> wait
