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

# airflow dags test writes its scheduling chatter (dag runs, task states, XComs) at INFO: the demo
# shows the provider's own lines (what each operation did, progress lines), the start and end of each
# task, and every warning and error; the whole output goes to $AIRFLOW_HOME/logs/demo-<dag>.log, and
# is printed whole when a DAG fails. graphviz only draws the DAG, which the demo does not.
export PYTHONWARNINGS="ignore:Could not import graphviz"
SHOWN='airflow_delta_provider|\[DAG TEST\] (starting|end) task|\[(warning|error|critical) *\]|Traceback|Error'
dags_test() {
    local log="$AIRFLOW_HOME/logs/demo-$1.log"
    mkdir -p "$(dirname "$log")"
    if ! airflow dags test "$@" 2>&1 | tee "$log" | { grep --line-buffered -E "$SHOWN" || true; } | shorten | heartbeat "airflow dags test $*"; then
        echo "==> airflow dags test $* failed; its whole output:"; cat "$log"; return 1
    fi
}
# Lines as they come; after 10 s with none, one line saying what still runs (Airflow's own start-up
# and the examples' plain-Python tasks print nothing for a while), so the demo never looks stuck.
heartbeat() {
    local what=$1 start=$SECONDS line status
    while true; do
        if IFS= read -r -t 10 line; then
            printf '%s\n' "$line"
        else
            status=$?
            ((status > 128)) || break
            printf '    ... %s: still running (%ds)\n' "$what" $((SECONDS - start))
        fi
    done
}
# A structlog line "<time> [info     ] <message> [<logger>] loc=..." as "<time> <message>".
shorten() {
    sed -u -E 's/^([0-9T:-]+)[0-9.]*Z \[info +\] (.*) \[[a-zA-Z_.]+\]( [a-z_]+=.*)?$/\1 \2/'
}

echo "==> Migrating the Airflow database in $AIRFLOW_HOME"
{ airflow db migrate >/dev/null; } 2>&1 | heartbeat "airflow db migrate"

# Each table's version before this run, so the summary shows what this run committed.
BEFORE="$("$PY" "$ROOT/dags_examples/demo_summary.py" --versions "$DELTA_DEMO_DATA")"

echo "==> Running delta_pipeline on local Spark (table: $DELTA_DEMO_DATA/delta/orders)"
dags_test delta_pipeline

echo "==> Running delta_downstream: the changes of the orders table since its last run"
dags_test delta_downstream

echo "==> Running delta_maintenance (health report, then only the OPTIMIZE, REORG, VACUUM, CHECKPOINT due) on the same table"
dags_test delta_maintenance

echo "==> Running delta_table_state: DESCRIBE DETAIL and history, then the upkeep the table's state calls for"
dags_test delta_table_state

echo "==> Running delta_daily_reload for 2026-05-01, again for 2026-05-01 (a rerun), then for 2026-05-02"
for day in 2026-05-01 2026-05-01 2026-05-02; do
    dags_test delta_daily_reload "$day"
done

echo
"$PY" "$ROOT/dags_examples/demo_summary.py" "$DELTA_DEMO_DATA" "$BEFORE"
