#!/usr/bin/env bash
# Run the delta_pipeline example once on local Spark, then delta_downstream and delta_maintenance, then
# print what they did (dags_examples/demo_summary.py).
# `make demo` calls this after it has installed Java and the .venv; run it from anywhere.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
export PATH="$(dirname "$PY"):$PATH"

# A project-local Airflow (SQLite), no example DAGs, our DAGs folder.
export AIRFLOW_HOME="$ROOT/.airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags_examples"
export DELTA_DEMO_DATA="$ROOT/data"
# JSON, not a URI: Python's urlsplit rejects "local[*]" as a broken IPv6 host.
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]", "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"}}'

echo "==> Migrating the Airflow database in $AIRFLOW_HOME"
airflow db migrate >/dev/null

# The orders table's version before this run (-1: none), so the summary shows what this run committed.
BEFORE="$("$PY" -c 'import sys
from airflow_delta_provider.delta.table import DeltaTable
t = DeltaTable(sys.argv[1])
print(t.latest_version() if t.exists() else -1)' "$DELTA_DEMO_DATA/delta/orders")"

echo "==> Running delta_pipeline on local Spark (table: $DELTA_DEMO_DATA/delta/orders)"
airflow dags test delta_pipeline

echo "==> Running delta_downstream: the changes of the orders table since its last run"
airflow dags test delta_downstream

echo "==> Running delta_maintenance (OPTIMIZE with Z-order, VACUUM, CHECKPOINT) on the same table"
airflow dags test delta_maintenance

echo
"$PY" "$ROOT/dags_examples/demo_summary.py" "$DELTA_DEMO_DATA" "$BEFORE"
