"""delta_maintenance: a table's daily upkeep, OPTIMIZE (Z-order) -> VACUUM -> CHECKPOINT.

1. ``optimize`` rewrites the small files of ``$DELTA_DEMO_DATA/delta/orders``
   Z-ordered by ``amount``: filters on it then skip more files. The rows do not
   change (``dataChange=false``), so downstream readers of changes skip the
   commit, and a concurrent append does not conflict with it.
2. ``vacuum`` deletes the files that no version within the retention needs
   (the table's ``delta.deletedFileRetentionDuration``, 7 days by default). It
   only lists and deletes, so it runs with no Spark (``engine="python"``).
3. ``checkpoint`` writes a checkpoint of the latest version, also with no Spark.

Runs on the ``spark_default`` connection, after ``delta_pipeline`` made the table.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import DAG

from airflow_delta_provider.operators.delta import (
    DeltaCheckpointOperator,
    DeltaOptimizeOperator,
    DeltaVacuumOperator,
)

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")

with DAG(
    dag_id="delta_maintenance",
    description="OPTIMIZE with Z-order, then VACUUM and CHECKPOINT, every day",
    schedule="@daily",
    catchup=False,
    default_args={"table_path": TABLE},
    tags=["delta", "example", "maintenance"],
) as dag:
    optimize = DeltaOptimizeOperator(
        task_id="optimize",
        zorder_by=["amount"],
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    vacuum = DeltaVacuumOperator(task_id="vacuum", engine="python")
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint", engine="python")

    optimize >> vacuum >> checkpoint
