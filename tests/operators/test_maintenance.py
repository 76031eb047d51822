"""The health operator and the maintenance autopilot, through ``dag.test()``.

Two scenarios of issue 25: a table of many small files with 30% of its rows
hidden by deletion vectors gets OPTIMIZE (of the crowded partition only) and
REORG, and nothing else; a healthy table gets nothing; files removed past
the retention get VACUUM LITE, and nothing else. The steps run the
ordinary operators on real Spark (spark-submit), each with its own commit.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap64

from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector
from airflow_delta_provider.delta.actions.model import RemoveFile
from airflow_delta_provider.delta.health.report import health_report
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.maintenance import (
    DeltaHealthReportLink,
    DeltaMaintenanceOperator,
    DeltaTableHealthOperator,
    delta_maintenance_group,
)
from tests.airflow_env import SPARK_TEST_CONF, run_dag, task_states, xcom
from tests.delta.conftest import create_table, write_data_file

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
ROWS_PER_FILE = 10
STEP_TASKS = ("optimize", "reorg", "vacuum_lite", "vacuum", "checkpoint")


def _table(root: Path, files_per_day: dict[str, int], hidden_per_file: int = 0) -> int:
    """A table partitioned by ``day``; with ``hidden_per_file``, a second commit gives
    every file an (inline) deletion vector hiding that many rows. Returns its rows."""
    root.mkdir()
    adds = [
        write_data_file(root, pa.table({"id": [n * 100 + i for i in range(ROWS_PER_FILE)]}), {"day": day})
        for day, count in files_per_day.items()
        for n in range(count)
    ]
    create_table(root, SCHEMA, ["day"], {"delta.enableDeletionVectors": "true"}, adds)
    if hidden_per_file:
        table = DeltaTable(root)
        txn = table.transaction("DELETE", snapshot=table.snapshot())
        now = int(time.time() * 1000)
        for f in adds:
            vector = inline_vector(BitMap64(range(hidden_per_file)))
            txn.add_all(
                [
                    RemoveFile(path=f.path, deletion_timestamp=now, size=f.size, partition_values=f.partition_values),
                    dataclasses.replace(f, deletion_vector=vector),
                ]
            )
        txn.commit()
    return len(adds) * ROWS_PER_FILE


def _steps(dag_run: Any) -> dict[str, str]:
    """The state of each step task of the maintenance group."""
    states = task_states(dag_run)
    return {t: states[f"maintenance.{t}"] for t in STEP_TASKS}


def _only(*ran: str) -> dict[str, str]:
    """Step states where exactly ``ran`` ran and the rest were skipped."""
    return {t: "success" if t in ran else "skipped" for t in STEP_TASKS}


def _autopilot_dag(dag_id: str, table: Path, reports: Path, **kwargs: Any) -> Any:
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, default_args={"retries": 0}) as dag:
        delta_maintenance_group(
            table_path=str(table), report_path=str(reports), spark_arguments={"conf": SPARK_TEST_CONF}, **kwargs
        )
    return dag


def test_the_health_operator_needs_no_spark_and_has_one_engine() -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        DeltaTableHealthOperator(task_id="h", table_path="/t", engine="spark")
    assert set(DeltaTableHealthOperator.template_fields) >= {"table_path", "thresholds", "report_path"}
    assert any(isinstance(link, DeltaHealthReportLink) for link in DeltaMaintenanceOperator.operator_extra_links)


@pytest.mark.usefixtures("airflow_db")
def test_a_healthy_table_gets_nothing(tmp_path: Path) -> None:

    table = tmp_path / "healthy"
    _table(table, {"2024-01-01": 2, "2024-01-02": 2})
    reports = tmp_path / "reports"
    dag = _autopilot_dag("delta_autopilot_healthy", table, reports)
    with dag:
        DeltaTableHealthOperator(task_id="health", table_path=str(table))
    dag_run = run_dag(dag)

    states = task_states(dag_run)
    assert states["maintenance.decide"] == "success" and states["health"] == "success"
    assert _steps(dag_run) == _only()
    decisions = xcom(dag_run, "maintenance.decide", key="decisions")
    assert decisions["due"] == [] and set(decisions["steps"]) == {"optimize", "reorg", "vacuum", "checkpoint"}
    assert not xcom(dag_run, "maintenance.decide")  # follows no task
    report = xcom(dag_run, "health")
    assert (report["numFiles"], report["version"], report["deletedRowShare"]) == (4, 0, 0.0)
    assert report == {**xcom(dag_run, "maintenance.decide", key="report"), "generatedAt": report["generatedAt"]}
    # The page was written and the task links to it.
    link = xcom(dag_run, "maintenance.decide", key=DeltaHealthReportLink().xcom_key)
    assert link.startswith("file://") and link.endswith(".html")
    page = Path(link.removeprefix("file://"))
    assert page.is_file() and page.is_relative_to(reports) and '<svg id="versions"' in page.read_text()
    assert DeltaTable(table).latest_version() == 0  # nothing committed


@pytest.mark.usefixtures("airflow_db")
def test_small_files_and_30_percent_deleted_rows_get_optimize_and_reorg_only(tmp_path: Path, duckdb_delta) -> None:
    table = tmp_path / "tired"
    rows = _table(table, {"2024-01-01": 52, "2024-01-02": 2}, hidden_per_file=3)
    before = health_report(DeltaTable(table))
    assert before.deleted_row_share == pytest.approx(0.3) and before.num_small_files == 54

    dag_run = run_dag(_autopilot_dag("delta_autopilot_tired", table, tmp_path / "reports"))

    assert _steps(dag_run) == _only("optimize", "reorg")
    decisions = xcom(dag_run, "maintenance.decide", key="decisions")
    assert decisions["due"] == ["optimize", "reorg"]
    assert decisions["steps"]["optimize"]["arguments"] == {"where": "(`day` = '2024-01-01')"}
    # Each step is its own commit, with its own XCom.
    optimize, reorg = xcom(dag_run, "maintenance.optimize"), xcom(dag_run, "maintenance.reorg")
    assert (optimize["operation"], optimize["version"]) == ("OPTIMIZE", 2)
    assert (reorg["operation"], reorg["version"]) == ("REORG", 3)
    history = DeltaTable(table).history()
    assert json.loads(history[1]["operationParameters"]["predicate"]) == [
        "(`day` = '2024-01-01')"
    ] or "2024-01-01" in json.dumps(history[1]["operationParameters"])

    after = health_report(DeltaTable(table))
    assert after.num_deleted_records == 0 and after.num_records == rows * 7 // 10
    assert [p.num_files for p in after.partitions] == [1, 2]  # the crowded partition compacted
    # delta-kernel-rs (DuckDB's delta extension) reads the rows that are left.
    (count,) = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{table}')").fetchone()
    assert count == rows * 7 // 10


@pytest.mark.usefixtures("airflow_db")
def test_files_removed_past_the_retention_get_vacuum_lite_only(tmp_path: Path) -> None:
    """Two files removed eight days ago, in commits made then, and no VACUUM
    yet: VACUUM LITE is due (the log holds every commit), runs as its own
    step, deletes exactly those files and records its state for the next one."""
    from airflow_delta_provider.delta.log.last_vacuum_info import LAST_VACUUM_INFO, read_last_vacuum_info

    table = tmp_path / "removed"
    _table(table, {"2024-01-01": 3})
    dt = DeltaTable(table)
    snap = dt.snapshot()
    eight_days_ago = time.time() - 8 * 86_400
    victims = sorted(snap.files, key=lambda f: f.path)[:2]
    txn = dt.transaction("DELETE", snapshot=snap)
    txn.read_files(victims)
    txn.add_all(f.remove(int(eight_days_ago * 1000)) for f in victims)
    txn.commit()
    for log_file in (table / "_delta_log").iterdir():  # the commits were made then too
        os.utime(log_file, (eight_days_ago, eight_days_ago))
    assert all((table / f.path).exists() for f in victims)

    dag_run = run_dag(_autopilot_dag("delta_autopilot_vacuum", table, tmp_path / "reports"))

    assert _steps(dag_run) == _only("vacuum_lite")
    decisions = xcom(dag_run, "maintenance.decide", key="decisions")
    assert decisions["due"] == ["vacuum"] and decisions["steps"]["vacuum"]["arguments"] == {"mode": "lite"}
    vacuum = xcom(dag_run, "maintenance.vacuum_lite")
    assert (vacuum["operation"], vacuum["version"]) == ("VACUUM END", 3)
    assert [h["operation"] for h in DeltaTable(table).history(limit=2)] == ["VACUUM END", "VACUUM START"]
    assert not any((table / f.path).exists() for f in victims)
    assert len(DeltaTable(table).snapshot().files) == 1
    assert (table / "_delta_log" / LAST_VACUUM_INFO).exists()
    assert read_last_vacuum_info(DeltaTable(table).log_store) == 1


@pytest.mark.usefixtures("airflow_db")
def test_an_unknown_threshold_fails_the_branch_and_nothing_runs(tmp_path: Path) -> None:
    """Bad input is a typed error naming it: the branch fails without retries,
    no step runs, no page is written, no version is committed."""
    table = tmp_path / "t"
    _table(table, {"2024-01-01": 60})
    reports = tmp_path / "reports"
    dag = _autopilot_dag("delta_autopilot_bad_threshold", table, reports, thresholds={"min_smal_files": 3})
    dag_run = run_dag(dag)

    states = task_states(dag_run)
    assert states["maintenance.decide"] == "failed"
    assert set(_steps(dag_run).values()) == {"upstream_failed"}
    assert not reports.exists() and DeltaTable(table).latest_version() == 0


@pytest.mark.usefixtures("airflow_db")
def test_the_page_goes_to_an_object_store_through_the_connection_and_no_secret_leaks(
    tmp_path: Path, s3_connection, capfd
) -> None:
    from airflow.sdk import DAG

    from airflow_delta_provider.delta.storage import open_storage
    from tests.operators.s3_connection import CONN_ID

    table = tmp_path / "t"
    _table(table, {"2024-01-01": 3})
    reports = s3_connection.uri("reports")
    with DAG("delta_health_to_s3", schedule=None, default_args={"retries": 0}) as dag:
        DeltaTableHealthOperator(task_id="health", table_path=str(table), report_path=reports, storage_conn_id=CONN_ID)
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"health": "success"}
    link = xcom(dag_run, "health", key=DeltaHealthReportLink().xcom_key)
    assert link.startswith(reports.rstrip("/") + "/delta_health_to_s3/health/") and link.endswith(".html")
    page = open_storage(reports, s3_connection.storage_options).get(link[len(reports.rstrip("/")) + 1 :])
    assert b'<svg id="deleted-rows"' in page
    out, err = capfd.readouterr()
    assert s3_connection.secret not in out + err + json.dumps(xcom(dag_run, "health")) + link


@pytest.mark.usefixtures("airflow_db")
def test_a_page_that_cannot_be_written_is_a_warning_and_the_branch_goes_on(tmp_path: Path, capfd, caplog) -> None:
    import logging

    table = tmp_path / "healthy"
    _table(table, {"2024-01-01": 2})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the report folder would be")
    reports = blocker / "reports"
    with caplog.at_level(logging.WARNING):
        dag_run = run_dag(_autopilot_dag("delta_autopilot_page_fails", table, reports))

    states = task_states(dag_run)
    assert states["maintenance.decide"] == "success"
    assert _steps(dag_run) == _only()
    assert xcom(dag_run, "maintenance.decide", key="decisions")["due"] == []
    assert not xcom(dag_run, "maintenance.decide", key=DeltaHealthReportLink().xcom_key)
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    assert "health report page" in logged and str(reports) in logged and "was not written" in logged


def test_the_page_connection_defaults_to_the_storage_connection() -> None:
    from airflow_delta_provider.operators.maintenance import _without_userinfo

    group_kwargs = {"table_path": "/t", "storage_conn_id": "tables", "report_path": "s3://r/p"}
    from airflow.sdk import DAG

    with DAG("delta_report_conn", schedule=None):
        group = delta_maintenance_group(**group_kwargs, report_conn_id="reports")
    decide = group.children["maintenance.decide"]
    assert (decide.storage_conn_id, decide.report_conn_id) == ("tables", "reports")
    assert DeltaTableHealthOperator(task_id="h", table_path="/t", storage_conn_id="tables").report_conn_id is None
    assert _without_userinfo("https://user:pw@host/reports") == "https://host/reports"
    assert _without_userinfo("s3://bucket/reports") == "s3://bucket/reports"
