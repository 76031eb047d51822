#!/usr/bin/env bash
# Run the delta_pipeline example once on local Spark, then delta_maintenance, then show the table's history.
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

echo "==> Running delta_pipeline on local Spark (table: $DELTA_DEMO_DATA/delta/orders)"
airflow dags test delta_pipeline

echo "==> Running delta_downstream: the changes of the orders table since its last run"
airflow dags test delta_downstream

echo "==> Running delta_maintenance (OPTIMIZE with Z-order, VACUUM, CHECKPOINT) on the same table"
airflow dags test delta_maintenance

echo
echo "==> History of $DELTA_DEMO_DATA/delta/orders"
"$PY" -m airflow_delta_provider.delta history "$DELTA_DEMO_DATA/delta/orders" | "$PY" -c '
import json, sys
for entry in sorted(json.load(sys.stdin), key=lambda e: e["version"]):
    metrics = entry.get("operationMetrics") or {}
    rows = ("numOutputRows", "numUpdatedRows", "numDeletedRows", "numCopiedRows", "numTargetRowsInserted",
            "numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsCopied")
    shown = ", ".join(k + "=" + str(metrics[k]) for k in rows if k in metrics)
    print("version %3d  %-14s %s" % (entry["version"], entry.get("operation", "?"), shown))
'
