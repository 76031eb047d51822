"""Issue 28 in a real deployment: bursts of versions, a restarted triggerer and
a dropped asset event, and a consumer built on ``assets.version_range`` that
processes every version once.

Each test has its own table and its own producer-less consumer DAG, scheduled
on an asset whose ``AssetWatcher`` runs ``DeltaTableEventTrigger``. The
consumer's task asks :func:`~airflow_delta_provider.assets.version_range`
what to process, appends the range to a file, and records it in the asset
state store. The commits are made with delta-rs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.deployment.airflow_deployment import AirflowDeployment

WATERMARK_KEY = "last_seen_version"  # DeltaTableEventTrigger's key in the asset state store

CONSUMER_DAG = """
import json

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_delta_provider.assets import processed_version, record_processed, table_asset_uri, version_range
from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger

DAG_ID, TABLE, OUT, FILTERS = {dag_id!r}, {table!r}, {out!r}, {filters!r}

table = Asset(
    name=DAG_ID,
    uri=table_asset_uri(TABLE),
    watchers=[AssetWatcher(name=DAG_ID, trigger=DeltaTableEventTrigger(table_path=TABLE, poll_interval=0.5, **FILTERS))],
)

with DAG(dag_id=DAG_ID, schedule=[table], max_active_runs=1, catchup=False):

    @task(inlets=[table])
    def consume(triggering_asset_events=None, asset_state_store=None, run_id=None):
        state = asset_state_store[table]
        todo = version_range(triggering_asset_events, processed_version(state, DAG_ID), table_path=TABLE, asset=table)
        with open(OUT, "a") as out:  # the processing: remember which versions this run was given
            out.write(json.dumps({{"run_id": run_id, "range": todo}}) + "\\n")
        record_processed(state, DAG_ID, todo)

    consume()
"""


@dataclass
class Consumer:
    """One consumer DAG and its table."""

    dag_id: str
    table: str
    out: Path

    def ranges(self) -> list[dict[str, Any] | None]:
        """The range each run processed, in order (None: nothing new)."""
        if not self.out.exists():
            return []
        return [json.loads(line)["range"] for line in self.out.read_text().splitlines()]

    def processed(self) -> list[int]:
        """Every version processed, in order, as often as it was processed."""
        return [v for r in self.ranges() if r for v in range(r["start_version"], r["end_version"] + 1)]


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _append(table: str, *ids: int) -> None:
    write_deltalake(table, _rows(*ids), mode="append")


def publish_together(table: str, *changes: Callable[[str], None]) -> None:
    """Make ``changes`` with delta-rs on a copy of the table, then publish their
    data files and, newest first, their commits: the first new commit appears
    last, so every poll of the log sees none of them or all of them."""
    root = Path(table)
    staging = root.with_name(root.name + ".staging")
    shutil.copytree(root, staging)
    try:
        for change in changes:
            change(str(staging))
        for path in staging.rglob("*"):
            relative = path.relative_to(staging)
            if path.is_file() and relative.parts[0] != "_delta_log" and not (root / relative).exists():
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, root / relative)
        known = {p.name for p in (root / "_delta_log").glob("*.json")}
        commits = sorted(p for p in (staging / "_delta_log").glob("*.json") if p.name not in known)
        for commit in reversed(commits):
            pending = root.with_name(f".{root.name}.{commit.name}")
            shutil.copy2(commit, pending)
            os.replace(pending, root / "_delta_log" / commit.name)  # atomic, as a store's put-if-absent
    finally:
        shutil.rmtree(staging)


def _events(deployment: AirflowDeployment, dag_id: str) -> list[dict[str, Any]]:
    """The payloads of the asset's events, oldest first."""
    rows = deployment.query(
        "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = ? ORDER BY e.id", dag_id
    )
    return [json.loads(extra)["payload"] for (extra,) in rows]


def _consumed(deployment: AirflowDeployment, dag_id: str) -> list[list[list[int]]]:
    """For each run of ``dag_id``, in order, the versions of each event it received."""
    runs = deployment.dag_runs(dag_id)
    consumed = []
    for run_id, _, _ in runs:
        rows = deployment.query(
            "SELECT e.extra FROM dagrun_asset_event x JOIN asset_event e ON e.id = x.event_id "
            "WHERE x.dag_run_id = ? ORDER BY e.id",
            run_id,
        )
        consumed.append([json.loads(extra)["payload"]["versions"] for (extra,) in rows])
    return consumed


@pytest.fixture(scope="module")
def consumers(deployment: AirflowDeployment, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Consumer]:
    """One consumer per test, all deployed at once, each watcher started (its
    watermark stored) before any test commits."""
    root = tmp_path_factory.mktemp("bursts")
    made: dict[str, Consumer] = {}
    for name, filters, versions in (
        ("burst", {}, 1),
        ("restart", {}, 1),
        ("dropped", {}, 1),
        ("filtered", {"data_changes_only": True}, 3),  # several files, for OPTIMIZE to compact
    ):
        consumer = Consumer(f"bursts_{name}", str(root / name), root / f"{name}.jsonl")
        for i in range(versions):
            _append(consumer.table, i)
        dag = CONSUMER_DAG.format(dag_id=consumer.dag_id, table=consumer.table, out=str(consumer.out), filters=filters)
        (deployment.dags_folder / f"{consumer.dag_id}.py").write_text(dag)
        made[name] = consumer
    for consumer in made.values():
        deployment.wait(
            lambda c=consumer: deployment.asset_state(c.dag_id, WATERMARK_KEY) is not None,
            f"the watcher of {consumer.dag_id} to start",
        )
    return made


def test_three_commits_between_two_polls_make_one_event_and_one_run(
    deployment: AirflowDeployment, consumers: dict[str, Consumer]
) -> None:
    consumer = consumers["burst"]
    publish_together(consumer.table, *(lambda t, i=i: _append(t, 10 + i) for i in range(3)))  # versions 1-3

    deployment.wait_for_runs_done(consumer.dag_id, 1)
    assert [e["versions"] for e in _events(deployment, consumer.dag_id)] == [[1, 2, 3]]
    assert _consumed(deployment, consumer.dag_id) == [[[1, 2, 3]]]
    assert consumer.processed() == [1, 2, 3]


def test_a_restarted_triggerer_delivers_what_was_committed_while_it_was_down(
    deployment: AirflowDeployment, consumers: dict[str, Consumer]
) -> None:
    """The issue's report: triggerer stopped, two commits, triggerer started.
    Both versions are processed, once each, with no further commit."""
    consumer = consumers["restart"]
    deployment.stop("triggerer")
    _append(consumer.table, 10)  # version 1
    _append(consumer.table, 11)  # version 2
    deployment.start("triggerer")

    deployment.wait(lambda: consumer.processed() == [1, 2], "versions 1 and 2 to be processed")
    deployment.wait_for_runs_done(consumer.dag_id, 1)
    assert consumer.processed() == [1, 2]
    assert [e["versions"] for e in _events(deployment, consumer.dag_id)] == [[1, 2]]


def test_a_run_processes_the_versions_of_an_event_that_was_dropped(
    deployment: AirflowDeployment, consumers: dict[str, Consumer]
) -> None:
    """Version 2's event is deleted from the metadata database, queue row and
    all, before the scheduler sees it (as apache/airflow#56050 drops one): no
    run gets it, yet the run of version 3's event processes 2 and 3."""
    consumer = consumers["dropped"]
    _append(consumer.table, 10)  # version 1
    deployment.wait_for_runs_done(consumer.dag_id, 1)
    assert consumer.processed() == [1]

    deployment.stop("scheduler")
    _append(consumer.table, 11)  # version 2
    (event_id,) = deployment.wait(
        lambda: [
            i
            for i, extra in deployment.query(
                "SELECT e.id, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = ?",
                consumer.dag_id,
            )
            if json.loads(extra)["payload"]["versions"] == [2]
        ],
        "the event of version 2",
    )
    deployment.execute(
        ("DELETE FROM asset_dag_run_queue WHERE target_dag_id = ?", (consumer.dag_id,)),
        ("DELETE FROM asset_event WHERE id = ?", (event_id,)),
    )
    deployment.start("scheduler")
    _append(consumer.table, 12)  # version 3

    deployment.wait_for_runs_done(consumer.dag_id, 2)
    assert _consumed(deployment, consumer.dag_id) == [[[1]], [[3]]]
    assert consumer.ranges()[-1] == {
        "table": consumer.table,
        "start_version": 2,
        "end_version": 3,
        "event_versions": [3],
    }
    assert consumer.processed() == [1, 2, 3]
    assert deployment.asset_state(consumer.dag_id, f"processed_version:{consumer.dag_id}") == "3"


def test_a_burst_of_an_optimize_and_an_append_makes_an_event_of_the_append_only(
    deployment: AirflowDeployment, consumers: dict[str, Consumer]
) -> None:
    consumer = consumers["filtered"]
    publish_together(
        consumer.table,
        lambda t: DeltaTable(t).optimize.compact(),  # version 3: OPTIMIZE, no data change
        lambda t: _append(t, 10),  # version 4
    )

    deployment.wait_for_runs_done(consumer.dag_id, 1)
    (event,) = _events(deployment, consumer.dag_id)
    assert (event["versions"], event["first_version"], event["operations"]) == ([4], 4, ["WRITE"])
    assert [h["operation"] for h in DeltaTable(consumer.table).history(2)] == ["WRITE", "OPTIMIZE"]
    assert consumer.processed() == [4]
