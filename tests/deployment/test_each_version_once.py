"""Issue 39, point 3, in a real deployment: a writer DAG and an ``AssetWatcher``
on the same table's asset, and a consumer DAG scheduled on it. Each version
gets one event on the asset, and the consumer's runs together process each
version once.

Three commits: a delta-rs append (the watcher's event), a RESTORE by the
writer DAG's operator (``engine="python"``: no Spark; the task's own event,
which the watcher leaves out), then, with the triggerer stopped, a second
delta-rs append (the restarted watcher's event). The consumer is the one of
:mod:`tests.deployment.test_asset_event_bursts`, built on
:func:`~airflow_delta_provider.assets.version_range`.
"""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from airflow_delta_provider.assets.consumer import event_versions
from tests.deployment.airflow_deployment import AirflowDeployment
from tests.deployment.test_asset_event_bursts import CONSUMER_DAG, WATERMARK_KEY, Consumer, _append

#: Added to the consumer's file when its commit is due; it runs once, as soon as it is parsed.
#: Its outlet is the consumer's asset itself, watcher and all: an ``Asset`` with the same URI
#: declared without the watcher would take the watcher off the asset each time its file is
#: parsed (Airflow keeps the watchers of the last parse), and events would be lost.
WRITER_DAG = """
from datetime import datetime

from airflow_delta_provider.operators.delta import DeltaRestoreOperator

with DAG(dag_id={dag_id!r}, schedule="@once", start_date=datetime(2026, 1, 1), catchup=False):
    DeltaRestoreOperator(task_id="restore", table_path=TABLE, version=0, engine="python", outlets=[table])
"""


def _event_versions(deployment: AirflowDeployment, asset: str) -> list[list[int]]:
    """The versions each of the asset's events names, oldest first (a watcher's or a writer's)."""
    rows = deployment.query(
        "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = ? ORDER BY e.id", asset
    )
    return [event_versions([{"extra": json.loads(extra)}]) for (extra,) in rows]


def test_a_writer_dag_and_a_watcher_give_each_version_one_event_and_one_consumer_run(
    deployment: AirflowDeployment, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("each-version-once")
    consumer = Consumer("once_consumer", str(root / "orders"), root / "consumed.jsonl")
    _append(consumer.table, 0)  # version 0
    dag_file = deployment.dags_folder / "once_consumer.py"
    consumer_dag = CONSUMER_DAG.format(dag_id=consumer.dag_id, table=consumer.table, out=str(consumer.out), filters={})
    dag_file.write_text(consumer_dag)
    deployment.wait(lambda: deployment.asset_state(consumer.dag_id, WATERMARK_KEY), "the watcher to start")

    _append(consumer.table, 1)  # version 1, by delta-rs: the watcher's event
    deployment.wait(lambda: consumer.processed() == [1], "version 1 to be processed")

    writer = "once_writer"
    staged = dag_file.with_suffix(".staged")
    staged.write_text(consumer_dag + WRITER_DAG.format(dag_id=writer))
    staged.replace(dag_file)  # at once: the dag-processor never parses half a file
    deployment.wait_for_runs_done(writer, 1)  # version 2, by the writer's task: its own event
    deployment.wait(lambda: consumer.processed() == [1, 2], "version 2 to be processed")

    deployment.stop("triggerer")
    _append(consumer.table, 2)  # version 3, while no watcher runs
    deployment.start("triggerer")
    deployment.wait(lambda: consumer.processed() == [1, 2, 3], "version 3 to be processed")
    runs = deployment.wait_for_runs_done(consumer.dag_id, 3)

    assert _event_versions(deployment, consumer.dag_id) == [[1], [2], [3]]
    assert len(runs) == 3
    assert [(r["start_version"], r["end_version"]) for r in consumer.ranges() if r] == [(1, 1), (2, 2), (3, 3)]
    assert consumer.processed() == [1, 2, 3]
    assert [h["operation"] for h in DeltaTable(consumer.table).history(3)] == ["WRITE", "RESTORE", "WRITE"]
