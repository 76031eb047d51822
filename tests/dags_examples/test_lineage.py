"""OpenLineage from a real run of the example pipeline.

``delta_pipeline`` runs once, unchanged, with ``dag.test()``, the OpenLineage
provider's listener on and its ``file`` transport writing every event to a
file. That happens in a fresh interpreter: OpenLineage reads its configuration
once per process, and this test process runs with it off. ``spark_default`` is
a ``spark_connect`` connection to the session's server there, so every step
runs in its task's process as a Connect client (the operators' spark-submit
path runs in tests/operators/test_delta.py and make demo); delta-rs checks
the table it leaves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_delta_provider.hooks.delta_spark import application_path

ROOT = Path(__file__).resolve().parents[2]
DELTA_TASKS = (
    "load_day_1", "append_day_2", "upsert_day_3", "flag_large_orders", "drop_cancelled", "checkpoint", "vacuum_dry_run"
)  # fmt: skip

_RUN = r"""
import json, sys
import tests.airflow_env as env  # a throwaway AIRFLOW_HOME, before airflow loads
from airflow.dag_processing.dagbag import DagBag

env.migrate_db()
dag = DagBag(dag_folder="dags_examples/delta_pipeline.py").dags["delta_pipeline"]
dag_run = env.run_dag(dag)
tasks = [t.task_id for t in dag.tasks]
result = {"states": env.task_states(dag_run), "xcom": {t: env.xcom(dag_run, t) for t in tasks}}
with open(sys.argv[1], "w") as f:  # not stdout, where OpenLineage's worker processes log too
    json.dump(result, f)
"""

pytestmark = [
    pytest.mark.skipif(not Path(application_path()).is_file(), reason="the Spark CLI is not there yet"),
    pytest.mark.timeout(1500),
]


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory, spark_connect) -> dict[str, Any]:
    """States, XComs and OpenLineage events of one run of delta_pipeline over Spark Connect."""
    pytest.importorskip("airflow.providers.openlineage")
    work = tmp_path_factory.mktemp("lineage")
    events, result = work / "events.jsonl", work / "result.json"
    env = {
        **os.environ,
        "DELTA_DEMO_DATA": str(work / "data"),
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events), "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "delta-tests",
        # The listener drops an event not sent within this (10 s by default): too short on a busy 2-core machine.
        "AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT": "300",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
            {"conn_type": "spark_connect", "host": "127.0.0.1", "port": spark_connect.port}
        ),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, str(result)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1400
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    run = json.loads(result.read_text())
    run["events"] = [json.loads(line) for line in events.read_text().splitlines()]
    run["table"] = str(work / "data" / "delta" / "orders")
    run["sources"] = work / "data" / "sources"
    return run


def _task_event(run: dict[str, Any], task_id: str, event_type: str = "COMPLETE") -> dict[str, Any]:
    (event,) = [
        e for e in run["events"] if e["job"]["name"] == f"delta_pipeline.{task_id}" and e["eventType"] == event_type
    ]
    return event


def _one(datasets: list[dict[str, Any]]) -> dict[str, Any]:
    (dataset,) = datasets
    return dataset


def _version(dataset: dict[str, Any]) -> str | None:
    return dataset["facets"].get("version", {}).get("datasetVersion")


def _statistics(dataset: dict[str, Any]) -> tuple[int, int, int]:
    stats = dataset["outputFacets"]["outputStatistics"]
    return stats["rowCount"], stats["size"], stats["fileCount"]


def test_every_delta_task_starts_and_completes_on_the_table(pipeline_run) -> None:
    assert set(pipeline_run["states"].values()) == {"success"}
    for task_id in DELTA_TASKS:
        for event_type in ("START", "COMPLETE"):
            event = _task_event(pipeline_run, task_id, event_type)
            assert event["job"]["namespace"] == "delta-tests"
            assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [("file", pipeline_run["table"])]
            assert _one(event["outputs"])["facets"]["storage"]["storageLayer"] == "delta"


def test_the_pipeline_leaves_the_rows_and_history_delta_rs_reads(pipeline_run) -> None:
    from deltalake import DeltaTable

    table = DeltaTable(pipeline_run["table"])
    assert table.version() == 4
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["order_id"])
    assert [(r["order_id"], r["status"], r["country"]) for r in rows] == [
        (1, "open", None), (2, "priority", "NL"), (5, "priority", "NL"), (7, "open", "DE"),
    ]  # fmt: skip
    history = {h["version"]: h["operation"] for h in table.history()}
    assert [history[v] for v in range(5)] == ["WRITE", "WRITE", "MERGE", "UPDATE", "DELETE"]


def test_the_version_facet_is_the_xcom_version(pipeline_run) -> None:
    versions = {t: pipeline_run["xcom"][t]["version"] for t in DELTA_TASKS}
    assert versions == {"load_day_1": 0, "append_day_2": 1, "upsert_day_3": 2, "flag_large_orders": 3,
                        "drop_cancelled": 4, "checkpoint": 4, "vacuum_dry_run": None}  # fmt: skip
    for task_id, version in versions.items():
        written = _one(_task_event(pipeline_run, task_id)["outputs"])
        assert _version(written) == (None if version is None else str(version))
        assert _version(_one(_task_event(pipeline_run, task_id, "START")["outputs"])) is None


def test_appends_read_their_source_and_report_what_they_wrote(pipeline_run) -> None:
    for task_id, day in (("load_day_1", "day_1"), ("append_day_2", "day_2")):
        event, metrics = _task_event(pipeline_run, task_id), pipeline_run["xcom"][task_id]["metrics"]
        source = str(pipeline_run["sources"] / f"{day}.parquet")
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [("file", source)]
        written = _one(event["outputs"])
        assert _statistics(written) == (metrics["numOutputRows"], metrics["numOutputBytes"], metrics["numFiles"])
    assert pipeline_run["xcom"]["load_day_1"]["metrics"]["numOutputRows"] == 4
    loaded = _one(_task_event(pipeline_run, "load_day_1")["outputs"])["facets"]
    assert [(f["name"], f["type"]) for f in loaded["schema"]["fields"]] == [
        ("order_id", "long"), ("amount", "long"), ("status", "string")
    ]  # fmt: skip
    # The overwrite replaced the schema: every column comes from its namesake in the source.
    amount = loaded["columnLineage"]["fields"]["amount"]["inputFields"]
    assert [(f["name"], f["field"]) for f in amount] == [(str(pipeline_run["sources"] / "day_1.parquet"), "amount")]
    evolved = _one(_task_event(pipeline_run, "append_day_2")["outputs"])["facets"]["schema"]["fields"]
    assert [f["name"] for f in evolved] == ["order_id", "amount", "status", "country"]


def test_update_and_delete_read_the_version_before_theirs(pipeline_run) -> None:
    for task_id, read_version in (("flag_large_orders", "2"), ("drop_cancelled", "3")):
        event = _task_event(pipeline_run, task_id)
        read, written = _one(event["inputs"]), _one(event["outputs"])
        assert (read["namespace"], read["name"]) == ("file", pipeline_run["table"])
        assert _version(read) == read_version
        assert int(_version(written)) == int(read_version) + 1
        metrics = pipeline_run["xcom"][task_id]["metrics"]
        rows = metrics.get("numUpdatedRows", 0) + metrics["numCopiedRows"]
        assert _statistics(written) == (rows, metrics["numAddedBytes"], metrics["numAddedFiles"])
    assert pipeline_run["xcom"]["flag_large_orders"]["metrics"]["numUpdatedRows"] == 2  # 260 and 120


def test_the_merge_reads_the_table_and_its_source(pipeline_run) -> None:
    """MERGE's inputs are the table at the version it read and the source; a
    column may come from either, so no column lineage is claimed."""
    event = _task_event(pipeline_run, "upsert_day_3")
    table, source = event["inputs"]
    assert (table["name"], _version(table)) == (pipeline_run["table"], "1")
    assert source["name"] == str(pipeline_run["sources"] / "day_3.parquet")
    written = _one(event["outputs"])
    assert _version(written) == "2" and "columnLineage" not in written["facets"]
    metrics = pipeline_run["xcom"]["upsert_day_3"]["metrics"]
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"], metrics["numTargetRowsInserted"]) == (
        1,
        1,
        1,
    )
    assert _statistics(written) == (
        metrics["numOutputRows"], metrics["numTargetBytesAdded"], metrics["numTargetFilesAdded"]
    )  # fmt: skip


def test_column_lineage_of_the_update_and_the_delete(pipeline_run) -> None:
    # flag_large_orders: SET status = 'priority' WHERE amount > 100 AND status = 'open'
    updated = _one(_task_event(pipeline_run, "flag_large_orders")["outputs"])["facets"]["columnLineage"]
    status = {f["field"]: [(t["type"], t["subtype"]) for t in f["transformations"]]
              for f in updated["fields"]["status"]["inputFields"]}  # fmt: skip
    assert status == {
        "status": [("DIRECT", "IDENTITY"), ("INDIRECT", "CONDITIONAL")],
        "amount": [("INDIRECT", "CONDITIONAL")],
    }
    assert [f["field"] for f in updated["fields"]["country"]["inputFields"]] == ["country"]
    # drop_cancelled: DELETE WHERE status = 'cancelled'
    deleted = _one(_task_event(pipeline_run, "drop_cancelled")["outputs"])["facets"]["columnLineage"]
    assert [(f["field"], f["transformations"][0]["subtype"]) for f in deleted["dataset"]] == [("status", "FILTER")]


def test_maintenance_writes_no_rows(pipeline_run) -> None:
    for task_id in ("checkpoint", "vacuum_dry_run"):
        event = _task_event(pipeline_run, task_id)
        assert event["inputs"] == [] and _one(event["outputs"])["outputFacets"] == {}
