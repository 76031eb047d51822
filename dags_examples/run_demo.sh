#!/usr/bin/env bash
# Run the delta_pipeline example once on local Spark, then delta_downstream, delta_maintenance and
# delta_table_state, then print what they did (dags_examples/demo_summary.py).
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

# Each table's version before this run, so the summary shows what this run committed.
BEFORE="$("$PY" "$ROOT/dags_examples/demo_summary.py" --versions "$DELTA_DEMO_DATA")"

echo "==> Running delta_pipeline on local Spark (table: $DELTA_DEMO_DATA/delta/orders)"
airflow dags test delta_pipeline

echo "==> Running delta_downstream: the changes of the orders table since its last run"
airflow dags test delta_downstream

echo "==> Running delta_maintenance (health report, then only the OPTIMIZE, REORG, VACUUM, CHECKPOINT due) on the same table"
airflow dags test delta_maintenance

echo "==> Running delta_table_state: DESCRIBE DETAIL and history, then the upkeep the table's state calls for"
airflow dags test delta_table_state

echo "==> Running delta_daily_reload for 2026-05-01, again for 2026-05-01 (a rerun), then for 2026-05-02"
for day in 2026-05-01 2026-05-01 2026-05-02; do
    airflow dags test delta_daily_reload "$day"
done

echo
"$PY" "$ROOT/dags_examples/demo_summary.py" "$DELTA_DEMO_DATA" "$BEFORE"
