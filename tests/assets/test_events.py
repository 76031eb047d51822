"""Asset events of the writing operators, through a real dag.test()."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.assets import table_asset_uri
from airflow_delta_provider.assets.events import ALIAS_PREFIX, table_alias
from airflow_delta_provider.operators.delta import (
    DeltaAlterTableOperator,
    DeltaChangesOperator,
    DeltaCheckpointOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from tests.airflow_env import register_dags, task_states, xcom

pytestmark = pytest.mark.usefixtures("airflow_db")


def _events(uri: str) -> list[dict]:
    """(task_id, extra) of every event recorded on the asset with ``uri``."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = (
            session.query(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetModel.uri == uri)
            .order_by(AssetEvent.id)
        )
        return [{"task_id": e.source_task_id, "extra": dict(e.extra or {}), "name": e.asset.name} for e in rows]


def _table(tmp_path: Path) -> Path:
    from deltalake import write_deltalake

    table = tmp_path / "orders"
    write_deltalake(str(table), pa.table({"id": pa.array([1, 2], pa.int64())}))
    return table


def _rows(uri: str) -> int:
    """How many assets have ``uri``."""
    from airflow.models.asset import AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return session.query(AssetModel).filter(AssetModel.uri == uri).count()


def test_a_commit_emits_one_event_on_the_declared_asset_and_no_commit_emits_none(tmp_path):
    """The table's asset among the writer's outlets: one event, after the commit, with
    its version; the outlet itself records none (a run that commits nothing would)."""
    from airflow.sdk import DAG, Asset

    table = _table(tmp_path)
    uri = table_asset_uri(str(table))
    orders = Asset(name="orders_declared", uri=uri)
    mine = Asset(name="my_own_outlet", uri=f"file://{tmp_path}/elsewhere")
    with DAG("delta_asset_events_commit", schedule=None, params={"table": str(table)}) as dag:
        commit = DeltaAlterTableOperator(
            task_id="commit",
            table_path="{{ params.table }}",  # the alias is named before rendering, the event after
            change={"set_properties": {"delta.appendOnly": "false"}},
            engine="python",
            outlets=[orders, mine],
        )
        dry_run = DeltaVacuumOperator(
            task_id="dry_run", table_path=str(table), dry_run=True, retention_hours=0, retention_check=False,
            engine="python", outlets=[orders],
        )  # fmt: skip
        commit >> dry_run
    register_dags(dag)
    dag_run = dag.test()

    assert task_states(dag_run) == {"commit": "success", "dry_run": "success"}
    result = xcom(dag_run, "commit")
    assert result["version"] == 1
    assert _events(uri) == [
        {
            "task_id": "commit",
            "extra": {"version": 1, "operation": result["operation"], "table": result["table"],
                      "metrics": result["metrics"]},
            "name": "orders_declared",
        }
    ]  # fmt: skip
    assert xcom(dag_run, "dry_run")["version"] is None  # ... and no event for it
    # The user's own outlet still gets its event.
    assert [e["task_id"] for e in _events(mine.uri)] == ["commit"]


def test_an_undeclared_asset_gets_no_event_and_no_error_or_warning(tmp_path, caplog):
    """Issue 39: no DAG declares the table's asset, so none can be scheduled on it. The
    event is skipped with one DEBUG line; nothing asks Airflow for the missing asset
    (Airflow logs an error for that, and warnings when it then creates the asset)."""
    import logging

    from airflow.sdk import DAG

    table = _table(tmp_path)
    uri = table_asset_uri(str(table))
    with DAG("delta_asset_events_undeclared", schedule=None) as dag:
        DeltaAlterTableOperator(
            task_id="commit",
            table_path=str(table),
            change={"set_properties": {"delta.appendOnly": "false"}},
            engine="python",
        )
    register_dags(dag)
    with caplog.at_level(logging.DEBUG, logger="airflow_delta_provider.assets.events"):
        dag_run = dag.test()

    assert task_states(dag_run) == {"commit": "success"}
    assert (_events(uri), _rows(uri)) == ([], 0)
    skipped = [r for r in caplog.records if r.name == "airflow_delta_provider.assets.events"]
    assert [r.levelname for r in skipped] == ["DEBUG"]
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING and "sset" in r.getMessage()]
    assert noisy == []


def test_the_event_lands_on_the_asset_a_consumer_registered_for_the_table(tmp_path):
    """The writer's DAG declares the asset by reference to the consumer's (same name and URI)."""
    from airflow.sdk import DAG, Asset, task

    table = _table(tmp_path)
    orders = Asset(name="orders_table", uri=table_asset_uri(str(table)))
    with DAG("delta_asset_events_consumer", schedule=[orders]) as consumer:

        @task
        def report(triggering_asset_events=None):
            return [e.extra["version"] for e in triggering_asset_events[orders]]

        report()
    with DAG("delta_asset_events_producer", schedule=None) as producer:
        DeltaAlterTableOperator(
            task_id="commit",
            table_path=str(table),
            change={"set_properties": {"delta.appendOnly": "false"}},
            engine="python",
            outlets=[orders],
        )
    register_dags(consumer, producer)
    producer.test()

    (event,) = _events(orders.uri)
    assert (event["name"], event["extra"]["version"]) == ("orders_table", 1)


def test_only_committing_operators_declare_the_alias():
    update = DeltaUpdateOperator(task_id="u", table_path="/t/{{ ds }}", updates={"a": "1"})
    assert table_alias("/t/{{ ds }}") in update.outlets
    assert table_alias("/t/{{ ds }}").name == f"{ALIAS_PREFIX}/t/{{{{ ds }}}}"
    assert not DeltaCheckpointOperator(task_id="c", table_path="/t").outlets
    changes = DeltaChangesOperator(task_id="ch", table_path="/t", start_version=0, output_path="/out")
    assert not changes.outlets


def test_a_catalog_name_goes_in_extra() -> None:
    from airflow_delta_provider.assets.events import commit_event_extra

    result = {"table": "s3://lake/orders", "version": 3, "operation": "WRITE", "metrics": {}}
    assert commit_event_extra(result, "uc://main.sales.orders")["catalog_name"] == "uc://main.sales.orders"
    assert "catalog_name" not in commit_event_extra(result)
