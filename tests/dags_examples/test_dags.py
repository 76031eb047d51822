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
    assert set(dagbag.dag_ids) == {"delta_pipeline", "delta_downstream", "delta_asset_events", "delta_s3_pipeline"}


def test_pipeline_runs_every_operator_on_the_demo_table(dagbag) -> None:
    dag = dagbag.dags["delta_pipeline"]
    kinds = [type(dag.get_task(t)).__name__ for t in (
        "load_day_1", "append_day_2", "flag_large_orders", "drop_cancelled", "checkpoint", "vacuum_dry_run"
    )]  # fmt: skip
    assert kinds == [
        "DeltaAppendOperator", "DeltaAppendOperator", "DeltaUpdateOperator",
        "DeltaDeleteOperator", "DeltaCheckpointOperator", "DeltaVacuumOperator",
    ]  # fmt: skip
    assert dag.get_task("append_day_2").merge_schema
    assert dag.get_task("vacuum_dry_run").dry_run
    assert {dag.get_task(t).table_path for t in ("load_day_1", "checkpoint")} == {
        dag.get_task("drop_cancelled").table_path
    }


def test_downstream_waits_with_the_deferrable_sensor(dagbag) -> None:
    sensor = dagbag.dags["delta_downstream"].get_task("wait_for_new_version")
    assert type(sensor).__name__ == "DeltaTableVersionSensor"
    assert sensor.deferrable


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
