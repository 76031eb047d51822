"""delta_table_state: look at a table, then do the upkeep its state calls for, and only that.

1. ``describe`` returns DESCRIBE DETAIL of ``$DELTA_DEMO_DATA/delta/orders``
   (``numFiles``, ``sizeInBytes``, ``properties``, the schema, ...) and
   ``history`` its last 20 commits (operation, parameters, metrics). Both read
   the log only: no Spark, no JVM.
2. ``choose`` (a branch) picks one path from what they returned:

   - ``compact``: many small files (at least :data:`MIN_FILES` files averaging
     under :data:`SMALL_FILE_BYTES`): OPTIMIZE on Spark;
   - ``vacuum``: no small-file problem, but commits since the last VACUUM
     rewrote or removed files (UPDATE, DELETE, MERGE, OPTIMIZE, ...), so
     unreferenced files may be waiting: VACUUM with no Spark;
   - ``nothing_to_do`` otherwise.

Runs after ``delta_pipeline`` made the table.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, task

from airflow_delta_provider.operators.delta import DeltaOptimizeOperator, DeltaVacuumOperator
from airflow_delta_provider.operators.table_info import DeltaDescribeOperator, DeltaHistoryOperator

DATA = Path(os.environ.get("DELTA_DEMO_DATA") or Path(__file__).resolve().parent.parent / "data")
TABLE = str(DATA / "delta" / "orders")
#: Compact when the table has at least this many files ...
MIN_FILES = 16
#: ... and they average under this size.
SMALL_FILE_BYTES = 32 * 1024 * 1024


def choose_path(detail: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """The task to run, from ``describe``'s and ``history``'s XComs (history newest first)."""
    files = detail["numFiles"]
    if files >= MIN_FILES and detail["sizeInBytes"] / files < SMALL_FILE_BYTES:
        return "compact"
    for commit in history:
        if commit.get("operation") in ("VACUUM END", "VACUUM START"):
            break
        metrics = commit.get("operationMetrics") or {}
        # delta-spark's and ours name it numRemovedFiles, delta-rs's num_removed_files.
        if int(metrics.get("numRemovedFiles") or metrics.get("num_removed_files") or 0) > 0:
            return "vacuum"
    return "nothing_to_do"


with DAG(
    dag_id="delta_table_state",
    description="DESCRIBE DETAIL and history, then OPTIMIZE, VACUUM or nothing",
    schedule="@daily",
    catchup=False,
    tags=["delta", "example", "maintenance"],
) as dag:
    describe = DeltaDescribeOperator(task_id="describe", table_path=TABLE)
    history = DeltaHistoryOperator(task_id="history", table_path=TABLE, limit=20)

    @task.branch
    def choose(detail: dict[str, Any], commits: list[dict[str, Any]]) -> str:
        return choose_path(detail, commits)

    compact = DeltaOptimizeOperator(
        task_id="compact",
        table_path=TABLE,
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    vacuum = DeltaVacuumOperator(task_id="vacuum", table_path=TABLE, engine="python")
    nothing_to_do = EmptyOperator(task_id="nothing_to_do")

    choose(describe.output, history.output) >> [compact, vacuum, nothing_to_do]
