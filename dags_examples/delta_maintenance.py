"""delta_maintenance: a table's daily upkeep, decided from its health: only what is due runs.

``delta_maintenance_group`` builds the autopilot as one task group:

1. ``maintenance.decide`` reads the health report of ``$DELTA_DEMO_DATA/delta/orders``
   from its log (no Spark): files and small files per partition, rows hidden
   by deletion vectors, commits since the last checkpoint, the last OPTIMIZE
   and VACUUM, the bytes a VACUUM would free. It logs the report and its
   decisions as one table, pushes the decisions as XCom (``decisions``),
   writes the report as an HTML page under ``$DELTA_DEMO_DATA/health_reports``
   (the task's "Delta health report" link), and follows only the due steps.
2. ``maintenance.optimize`` (Spark) compacts the partitions with too many small
   files, and only those; ``maintenance.reorg`` (Spark) purges deletion vectors
   that hide too many rows; ``maintenance.vacuum_lite`` or ``maintenance.vacuum``
   deletes the files the log removed past the retention (no Spark); and
   ``maintenance.checkpoint`` writes a checkpoint when enough commits went
   without one (no Spark). The others are skipped. Each is an ordinary
   operator: its own commit, its own XCom.

:data:`THRESHOLDS` lowers two of the defaults to the demo table's size (see
``docs/maintenance.rst`` for all of them). Runs on the ``spark_default``
connection, after ``delta_pipeline`` made the table.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG

from airflow_delta_provider.operators.maintenance import delta_maintenance_group

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
#: The demo table is small: compact a partition from 4 small files (default 50),
#: checkpoint after 5 commits without one (default: the table's checkpoint interval, 10).
THRESHOLDS = {"min_small_files": 4, "max_commits_since_checkpoint": 5}

with DAG(
    dag_id="delta_maintenance",
    description="Health report, then only the OPTIMIZE, REORG, VACUUM and CHECKPOINT that are due, every day",
    schedule="@daily",
    catchup=False,
    tags=["delta", "example", "maintenance"],
) as dag:
    delta_maintenance_group(
        table_path=TABLE,
        thresholds=THRESHOLDS,
        report_path=str(DATA / "health_reports"),
        spark_arguments={"conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}},
    )
