"""delta_pipeline: the life of a Delta table, one spark-submit per step.

1. ``write_day_files`` writes two days of orders as Parquet (the second day
   brings a new column, ``country``).
2. ``load_day_1`` overwrites the table with day 1 (creating it on first run).
3. ``append_day_2`` appends day 2 and lets the schema evolve (``merge_schema``).
4. ``flag_large_orders`` updates the orders above a threshold (a DAG param).
5. ``drop_cancelled`` deletes cancelled orders.
6. ``checkpoint`` writes a checkpoint of the latest version.
7. ``vacuum_dry_run`` counts the files a vacuum would delete, deleting none.
8. ``report`` pulls every step's version from XCom and prints the story.

Runs on the ``spark_default`` connection (``local[*]`` in ``make demo``);
the table lives in ``$DELTA_DEMO_DATA/delta/orders`` (default ``<repo>/data``).
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_delta_provider.operators.delta import (
    DeltaAppendOperator,
    DeltaCheckpointOperator,
    DeltaDeleteOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
SOURCES = DATA / "sources"

# Small, so a laptop runs every step in seconds.
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}

with DAG(
    dag_id="delta_pipeline",
    description="Append with schema evolution, update, delete, checkpoint and vacuum a Delta table",
    schedule=None,
    catchup=False,
    params={"large_order_threshold": 100},
    default_args={"conf": SPARK_CONF, "table_path": TABLE},
    tags=["delta", "example"],
) as dag:

    @task
    def write_day_files() -> dict[str, str]:
        """Two days of orders as Parquet; day 2 adds a column."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        SOURCES.mkdir(parents=True, exist_ok=True)
        day_1 = pa.table(
            {
                "order_id": pa.array([1, 2, 3, 4], pa.int64()),
                "amount": pa.array([40, 250, 90, 180], pa.int64()),
                "status": ["open", "open", "cancelled", "open"],
            }
        )
        day_2 = pa.table(
            {
                "order_id": pa.array([5, 6], pa.int64()),
                "amount": pa.array([120, 15], pa.int64()),
                "status": ["open", "cancelled"],
                "country": ["NL", "FR"],
            }
        )
        paths = {"day_1": str(SOURCES / "day_1.parquet"), "day_2": str(SOURCES / "day_2.parquet")}
        pq.write_table(day_1, paths["day_1"])
        pq.write_table(day_2, paths["day_2"])
        return paths

    files = write_day_files()

    load_day_1 = DeltaAppendOperator(
        task_id="load_day_1",
        source="{{ ti.xcom_pull(task_ids='write_day_files')['day_1'] }}",
        mode="overwrite",
        overwrite_schema=True,
    )
    append_day_2 = DeltaAppendOperator(
        task_id="append_day_2",
        source="{{ ti.xcom_pull(task_ids='write_day_files')['day_2'] }}",
        merge_schema=True,
    )
    flag_large_orders = DeltaUpdateOperator(
        task_id="flag_large_orders",
        updates={"status": "'priority'"},
        condition="amount > {{ params.large_order_threshold }} AND status = 'open'",
    )
    drop_cancelled = DeltaDeleteOperator(task_id="drop_cancelled", condition="status = 'cancelled'")
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint")
    vacuum_dry_run = DeltaVacuumOperator(
        task_id="vacuum_dry_run", retention_hours=0, retention_check=False, dry_run=True
    )

    @task
    def report(ti=None) -> list[str]:
        """One line per step: the version it committed, pulled from XCom."""
        lines = []
        for step in ("load_day_1", "append_day_2", "flag_large_orders", "drop_cancelled", "checkpoint"):
            result = ti.xcom_pull(task_ids=step)
            lines.append(f"{step}: {result['operation']} -> version {result['version']} {result['metrics']}")
        vacuum = ti.xcom_pull(task_ids="vacuum_dry_run")
        lines.append(f"vacuum_dry_run: {vacuum['metrics']} (version {vacuum['version']}: nothing deleted)")
        for line in lines:
            print(line)
        return lines

    (
        files
        >> load_day_1
        >> append_day_2
        >> flag_large_orders
        >> drop_cancelled
        >> checkpoint
        >> vacuum_dry_run
        >> report()
    )
