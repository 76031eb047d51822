"""delta_pipeline: the life of a Delta table, one spark-submit per step.

1. ``write_day_files`` writes three days of orders as Parquet (the second
   day brings a new column, ``country``; the third corrects earlier orders).
2. ``load_day_1`` overwrites the table with day 1 (creating it on first run),
   with the change data feed on, for ``delta_downstream``.
3. ``append_day_2`` appends day 2 and lets the schema evolve (``merge_schema``).
4. ``upsert_day_3`` merges day 3 in: a changed order is updated, an order
   cancelled since is deleted, a new one is inserted (MERGE).
5. ``flag_large_orders`` updates the orders above a threshold (a DAG param).
6. ``drop_cancelled`` deletes cancelled orders.
7. ``checkpoint`` writes a checkpoint of the latest version.
8. ``vacuum_dry_run`` counts the files a vacuum would delete, deleting none.
9. ``report`` pulls every step's version from XCom and prints the story.

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
    DeltaMergeOperator,
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
    description="Append with schema evolution, upsert, update, delete, checkpoint and vacuum a Delta table",
    schedule=None,
    catchup=False,
    params={"large_order_threshold": 100},
    default_args={"conf": SPARK_CONF, "table_path": TABLE},
    tags=["delta", "example"],
) as dag:

    @task
    def write_day_files() -> dict[str, str]:
        """Three days of orders as Parquet; day 2 adds a column, day 3 corrects orders."""
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
        day_3 = pa.table(
            {
                "order_id": pa.array([2, 4, 7], pa.int64()),
                "amount": pa.array([260, 180, 75], pa.int64()),
                "status": ["open", "cancelled", "open"],
                "country": ["NL", "NL", "DE"],
            }
        )
        paths = {day: str(SOURCES / f"{day}.parquet") for day in ("day_1", "day_2", "day_3")}
        for day, rows in (("day_1", day_1), ("day_2", day_2), ("day_3", day_3)):
            pq.write_table(rows, paths[day])
        return paths

    files = write_day_files()

    load_day_1 = DeltaAppendOperator(
        task_id="load_day_1",
        source="{{ ti.xcom_pull(task_ids='write_day_files')['day_1'] }}",
        mode="overwrite",
        overwrite_schema=True,
        table_properties={"delta.enableChangeDataFeed": "true"},  # for delta_downstream
    )
    append_day_2 = DeltaAppendOperator(
        task_id="append_day_2",
        source="{{ ti.xcom_pull(task_ids='write_day_files')['day_2'] }}",
        merge_schema=True,
    )
    upsert_day_3 = DeltaMergeOperator(
        task_id="upsert_day_3",
        source="{{ ti.xcom_pull(task_ids='write_day_files')['day_3'] }}",
        on="t.order_id = s.order_id",
        clauses=[
            {"when": "matched", "condition": "s.status = 'cancelled'", "delete": True},
            {"when": "matched", "update": "*"},
            {"when": "not_matched", "insert": "*"},
        ],
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
        steps = ("load_day_1", "append_day_2", "upsert_day_3", "flag_large_orders", "drop_cancelled", "checkpoint")
        for step in steps:
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
        >> upsert_day_3
        >> flag_large_orders
        >> drop_cancelled
        >> checkpoint
        >> vacuum_dry_run
        >> report()
    )
