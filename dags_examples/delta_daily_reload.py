"""delta_daily_reload: each run replaces its own day's rows, so reruns and backfills are safe.

``extract`` lands the day's rows as parquet (here: made up from the date);
``reload`` writes them with ``mode="overwrite"`` and
``replace_where="ds = '{{ ds }}'"``: the day's old rows go and the new ones
come in one commit. Readers never see the day empty, a failure leaves the
table as it was, and running the same logical date twice leaves the same
table (``make demo`` runs 2026-05-01 twice, then 2026-05-02, and prints the
rows per day). The first run creates the table, partitioned by ``ds``.

``delta_daily_reload_consumer`` is scheduled on the table's asset: after
each reload commits, the operator emits an asset event whose ``extra``
holds the committed version, which the consumer reads from
``triggering_asset_events``. It runs under a scheduler (``airflow
standalone``), not in ``make demo``'s ``airflow dags test``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Asset, task

from airflow_delta_provider.operators.delta import DeltaAppendOperator

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
EVENTS = str(DATA / "delta" / "events")
LANDING = DATA / "landing" / "events"
#: Spark settings for a small local run.
SPARK_CONF = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}

with DAG(
    dag_id="delta_daily_reload",
    description="Reload one day of the events table, idempotently (replace_where)",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 5, 1, tz="UTC"),
    catchup=False,
    tags=["delta", "example"],
) as reload_dag:

    @task
    def extract(ds: str | None = None) -> str:
        """Land the day's rows: four events, the same ones for the same day."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        assert ds is not None
        folder = LANDING / ds
        folder.mkdir(parents=True, exist_ok=True)
        day = int(ds.replace("-", ""))
        rows = pa.table(
            {
                "event_id": pa.array([day * 10 + i for i in range(4)], pa.int64()),
                "kind": ["view", "view", "click", "buy"],
                "ds": [ds] * 4,
            }
        )
        pq.write_table(rows, folder / "part-0.parquet")
        return str(folder)

    reload = DeltaAppendOperator(
        task_id="reload",
        table_path=EVENTS,
        source=str(LANDING / "{{ ds }}"),
        mode="overwrite",
        replace_where="ds = '{{ ds }}'",
        partition_by=["ds"],
        conf=SPARK_CONF,
    )
    extract() >> reload


with DAG(
    dag_id="delta_daily_reload_consumer",
    description="Runs after each reload of the events table, with the version it committed",
    schedule=[Asset(Path(EVENTS).as_uri())],
    catchup=False,
    tags=["delta", "example"],
) as consumer_dag:

    @task
    def committed_versions(triggering_asset_events=None) -> list[int]:
        """The table versions whose commits scheduled this run."""
        versions = []
        for events in (triggering_asset_events or {}).values():
            for event in events:
                versions.append(event.extra["version"])
                print(f"events table: {event.extra['operation']} committed version {event.extra['version']}")
        return versions

    committed_versions()
