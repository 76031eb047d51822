"""The example DAGs parse, and use the provider's operators, sensor and trigger."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(EXAMPLES))


def test_examples_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {
        "delta_pipeline", "delta_downstream", "delta_asset_events", "delta_s3_pipeline", "delta_maintenance",
        "delta_daily_reload", "delta_daily_reload_consumer", "delta_table_state", "docs_examples",
    }  # fmt: skip


def test_pipeline_runs_every_operator_on_the_demo_table(dagbag) -> None:
    dag = dagbag.dags["delta_pipeline"]
    kinds = [type(dag.get_task(t)).__name__ for t in (
        "load_day_1", "append_day_2", "upsert_day_3", "flag_large_orders", "drop_cancelled", "checkpoint",
        "vacuum_dry_run",
    )]  # fmt: skip
    assert kinds == [
        "DeltaAppendOperator", "DeltaAppendOperator", "DeltaMergeOperator", "DeltaUpdateOperator",
        "DeltaDeleteOperator", "DeltaCheckpointOperator", "DeltaVacuumOperator",
    ]  # fmt: skip
    assert dag.get_task("append_day_2").merge_schema
    assert dag.get_task("vacuum_dry_run").dry_run
    assert {dag.get_task(t).table_path for t in ("load_day_1", "checkpoint")} == {
        dag.get_task("drop_cancelled").table_path
    }


def test_downstream_reads_the_range_version_range_gives(dagbag) -> None:
    from airflow_delta_provider.assets import table_asset_uri

    dag = dagbag.dags["delta_downstream"]
    read_changes = dag.get_task("read_changes")
    assert type(read_changes).__name__ == "DeltaChangesOperator"
    assert dag.max_active_runs == 1
    # Scheduled on the table's asset, by the URI the writers and delta_asset_events use.
    assert [a.uri for a in dag.timetable.asset_condition.objects] == [table_asset_uri(read_changes.table_path)]
    assert [t.task_id for t in read_changes.upstream_list] == ["versions_to_process"]
    assert read_changes.version_range.operator.task_id == "versions_to_process"


@pytest.mark.usefixtures("airflow_db")
def test_downstream_processes_only_the_changes_it_has_not_seen(tmp_path, monkeypatch) -> None:
    """dag.test() of delta_downstream three times, around three upstream
    commits (delta-rs's UPDATE, DELETE and append): each run reads only the
    versions after the last one recorded in the asset's state store, the two
    runs' counts add up to the table's whole change data feed as delta-rs
    reads it, and a run with nothing new reads and writes nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable, write_deltalake

    from tests.airflow_env import run_dag, task_states, xcom

    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path))
    table = str(tmp_path / "delta" / "orders")

    def orders(ids: range) -> pa.Table:
        keys = pa.array(ids, pa.int64())
        return pa.table({"order_id": keys, "amount": keys, "status": ["open"] * len(ids)})

    write_deltalake(table, orders(range(4)), configuration={"delta.enableChangeDataFeed": "true"})  # version 0
    # The asset the DAG is scheduled on, as delta_asset_events registers it.
    from tests.airflow_env import register_dags

    register_dags(DagBag(dag_folder=str(EXAMPLES / "delta_asset_events.py")).dags["delta_asset_events"])
    dag = DagBag(dag_folder=str(EXAMPLES / "delta_downstream.py")).dags["delta_downstream"]

    first = run_dag(dag)
    assert set(task_states(first).values()) == {"success"}
    seen = xcom(first, "read_changes")
    assert (seen["metrics"]["startVersion"], seen["version"]) == (0, 0)
    assert seen["metrics"]["changes"] == {"insert": 4, "delete": 0, "update_preimage": 0, "update_postimage": 0}
    assert xcom(first, "remember_version") == 0

    DeltaTable(table).update({"amount": "amount + 100"}, predicate="order_id < 2")  # version 1
    DeltaTable(table).delete("order_id = 3")  # version 2
    write_deltalake(table, orders(range(10, 11)), mode="append")  # version 3

    second = run_dag(dag)
    assert set(task_states(second).values()) == {"success"}
    assert xcom(second, "versions_to_process") == {
        "table": table, "start_version": 1, "end_version": 3, "event_versions": []
    }  # fmt: skip
    seen = xcom(second, "read_changes")
    assert (seen["metrics"]["startVersion"], seen["version"]) == (1, 3)
    assert seen["metrics"]["changes"] == {"insert": 1, "delete": 1, "update_preimage": 2, "update_postimage": 2}
    written = pq.read_table(tmp_path / "changes" / "orders" / "up-to-3")
    assert sorted(set(written["_commit_version"].to_pylist())) == [1, 2, 3]
    assert sorted(written["order_id"].to_pylist()) == [0, 0, 1, 1, 3, 10]
    assert xcom(second, "remember_version") == 3

    feed = pa.RecordBatchReader.from_stream(DeltaTable(table).load_cdf(starting_version=0)).read_all()
    everything = {t: feed["_change_type"].to_pylist().count(t) for t in seen["metrics"]["changes"]}
    first_counts = xcom(first, "read_changes")["metrics"]["changes"]
    assert {t: first_counts[t] + n for t, n in seen["metrics"]["changes"].items()} == everything

    third = run_dag(dag)  # nothing new: no Spark, no folder
    assert set(task_states(third).values()) == {"success"}
    assert xcom(third, "versions_to_process") is None
    assert xcom(third, "read_changes")["version"] is None
    assert sorted(p.name for p in (tmp_path / "changes" / "orders").iterdir()) == ["up-to-0", "up-to-3"]


def test_asset_dag_is_scheduled_by_the_event_trigger(dagbag) -> None:
    from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger

    dag = dagbag.dags["delta_asset_events"]
    (asset,) = dag.timetable.asset_condition.objects
    assert asset.uri.startswith("file:///") and asset.uri.endswith("/delta/orders")
    assert [type(w.trigger) for w in asset.watchers] == [DeltaTableEventTrigger]


def test_s3_example_takes_its_credentials_from_a_connection(dagbag) -> None:
    dag = dagbag.dags["delta_s3_pipeline"]
    assert {t.task_id for t in dag.tasks} == {
        "load", "flag_large_orders", "drop_cancelled", "changed", "checkpoint", "vacuum"
    }  # fmt: skip
    for task in dag.tasks:
        assert task.table_path.startswith("s3://")
        assert task.storage_conn_id == "aws_lake"
    assert dag.get_task("changed").deferrable


@pytest.mark.usefixtures("airflow_db")
def test_the_maintenance_dag_runs_with_real_spark_submit(tmp_path, monkeypatch) -> None:
    """dag.test() of delta_maintenance on a table of six small files and six
    commits without a checkpoint: the autopilot runs OPTIMIZE (a real
    spark-submit) and CHECKPOINT (no Spark), and skips REORG and VACUUM."""
    import pyarrow as pa
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable, write_deltalake

    from tests.airflow_env import run_dag, task_states, xcom

    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path))
    table = tmp_path / "delta" / "orders"
    for day in range(6):
        ids = pa.array(range(day * 10, day * 10 + 10), pa.int64())
        write_deltalake(str(table), pa.table({"order_id": ids, "amount": ids, "status": ["open"] * 10}), mode="append")
    expected = sorted(DeltaTable(str(table)).to_pyarrow_table()["order_id"].to_pylist())
    dag = DagBag(dag_folder=str(EXAMPLES / "delta_maintenance.py")).dags["delta_maintenance"]

    dag_run = run_dag(dag)

    assert task_states(dag_run) == {
        "maintenance.decide": "success",
        "maintenance.optimize": "success",
        "maintenance.reorg": "skipped",
        "maintenance.vacuum_lite": "skipped",
        "maintenance.vacuum": "skipped",
        "maintenance.checkpoint": "success",
    }
    assert xcom(dag_run, "maintenance.decide", key="decisions")["due"] == ["optimize", "checkpoint"]
    optimized = xcom(dag_run, "maintenance.optimize")
    assert (optimized["version"], optimized["operation"]) == (6, "OPTIMIZE")
    assert (optimized["metrics"]["numRemovedFiles"], optimized["metrics"]["numAddedFiles"]) == (6, 1)
    assert xcom(dag_run, "maintenance.checkpoint")["version"] == 6
    assert list((tmp_path / "health_reports").rglob("*.html"))
    reader = DeltaTable(str(table))
    assert len(reader.file_uris()) == 1
    assert sorted(reader.to_pyarrow_table()["order_id"].to_pylist()) == expected


@pytest.mark.usefixtures("airflow_db")
def test_the_daily_reload_leaves_the_same_rows_when_a_day_is_rerun(tmp_path, monkeypatch) -> None:
    """dag.test() of delta_daily_reload for a day, the same day again, then the next day:
    each day holds its four rows once; the rerun committed a version that changed nothing."""
    import pendulum
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable

    from tests.airflow_env import run_dag, task_states, xcom

    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path))
    dag = DagBag(dag_folder=str(EXAMPLES / "delta_daily_reload.py")).dags["delta_daily_reload"]
    table = tmp_path / "delta" / "events"
    after: list[list[tuple]] = []
    for day in (1, 1, 2):
        dag_run = run_dag(dag, logical_date=pendulum.datetime(2026, 5, day, tz="UTC"))
        assert task_states(dag_run) == {"extract": "success", "reload": "success"}
        after.append(sorted(DeltaTable(str(table)).to_pyarrow_table().to_pydict()["event_id"]))
    assert xcom(dag_run, "reload")["version"] == 2
    assert after[0] == after[1] == [202605010, 202605011, 202605012, 202605013]
    assert after[2] == after[1] + [202605020, 202605021, 202605022, 202605023]
    history = DeltaTable(str(table)).history()
    assert [h["operationParameters"].get("predicate") for h in history] == [
        "ds = '2026-05-02'", "ds = '2026-05-01'", "ds = '2026-05-01'",
    ]  # fmt: skip


def test_the_reload_consumer_reads_the_versions_from_its_asset_events(dagbag) -> None:
    from types import SimpleNamespace

    from airflow_delta_provider.assets.uri import table_asset_uri

    dag = dagbag.dags["delta_daily_reload_consumer"]
    reload = dagbag.dags["delta_daily_reload"].get_task("reload")
    # Scheduled on the asset the reload task emits its events on.
    assert [asset.uri for asset in dag.timetable.asset_condition.objects] == [table_asset_uri(reload.table_path)]
    task = dag.get_task("committed_versions")
    events = {"events": [SimpleNamespace(extra={"version": 3, "operation": "WRITE"})]}
    assert task.python_callable(triggering_asset_events=events) == [3]


@pytest.mark.usefixtures("airflow_db")
def test_table_state_branches_by_what_describe_and_history_return(tmp_path, monkeypatch) -> None:
    """dag.test() of delta_table_state, with no Spark: a fresh table needs
    nothing; after a DELETE that removed a file it takes the VACUUM path; with
    many small files it would compact (that branch runs Spark, so only the
    choice is checked here)."""
    import pyarrow as pa
    from airflow.dag_processing.dagbag import DagBag
    from deltalake import DeltaTable, write_deltalake

    from tests.airflow_env import run_dag, task_states, xcom

    monkeypatch.setenv("DELTA_DEMO_DATA", str(tmp_path))
    table = str(tmp_path / "delta" / "orders")
    write_deltalake(table, pa.table({"order_id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "a", "b"]}),
                    partition_by=["day"])  # fmt: skip
    module = DagBag(dag_folder=str(EXAMPLES / "delta_table_state.py"))
    dag = module.dags["delta_table_state"]

    fresh = run_dag(dag)
    assert task_states(fresh) == {
        "describe": "success", "history": "success", "choose": "success",
        "nothing_to_do": "success", "vacuum": "skipped", "compact": "skipped",
    }  # fmt: skip
    assert xcom(fresh, "describe")["numFiles"] == 2

    DeltaTable(table).delete("day = 'b'")
    after_delete = run_dag(dag)
    states = task_states(after_delete)
    assert (states["vacuum"], states["nothing_to_do"], states["compact"]) == ("success", "skipped", "skipped")
    assert xcom(after_delete, "history")[0]["operation"] == "DELETE"

    choose_path = dag.get_task("choose").python_callable.__globals__["choose_path"]
    many_small = {"numFiles": 100, "sizeInBytes": 100 * 1024}
    assert choose_path(many_small, []) == "compact"
    assert choose_path(
        {"numFiles": 2, "sizeInBytes": 10}, [{"operation": "VACUUM END"}, *xcom(after_delete, "history")]
    ) == ("nothing_to_do")
