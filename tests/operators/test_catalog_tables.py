"""Tables by name through Airflow: one ``dag.test()`` pipeline per catalog, with no Spark.

- A pipeline by name on each catalog (Unity Catalog, Glue, the Hive Metastore):
  DeltaRegisterTableOperator registers a table that exists at a path, then
  CHECKPOINT and VACUUM (``engine="python"``), the version sensor, poking and
  deferred (its trigger, run as the triggerer would), and DESCRIBE, all by name.
- Unity Catalog's credentials, on Azurite, in one more run: the tasks hold the
  catalog's token and no storage key; the server vends a SAS, with which a task
  writes. The vended SAS, the catalogs' tokens and the account key behind them
  never reach XCom, a log line, a commit or the serialized trigger (the
  planted-secret check). Through a connection whose token holds a read-only
  grant, a writing task fails at once (no retry) with a clear error, nothing
  written, while a reading task succeeds.
- Short-lived credentials (the proxy says they last a minute): the sensor and
  the trigger renew them between polls, from the bound table, and keep reading.
- A retry by name that finds its earlier try's commit reads that commit's time
  with the vended credentials (the process holds no storage key).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.operators.delta import (
    DeltaCheckpointOperator,
    DeltaRegisterTableOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.operators.table_info import DeltaDescribeOperator
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor
from airflow_delta_provider.triggers.delta_table import DeltaTableVersionTrigger
from tests.airflow_env import run_dag, task_states, task_tries, xcom
from tests.storage_servers import AZURITE_KEY


def _pipeline(dag_id: str, name: str, location: str):
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None) as dag:
        register = DeltaRegisterTableOperator(task_id="register", table_path=name, location=location)
        checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table_path=name, engine="python")
        vacuum = DeltaVacuumOperator(task_id="vacuum", table_path=name, engine="python")
        sensor = DeltaTableVersionSensor(task_id="sensor", table_path=name, after_version=-1, poke_interval=1)
        describe = DeltaDescribeOperator(task_id="describe", table_path=name)
        register >> checkpoint >> vacuum >> sensor >> describe
    return dag


@pytest.mark.usefixtures("airflow_db")
def test_a_pipeline_by_name(catalog, tmp_path: Path) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    location = (tmp_path / "root" / "events").resolve().as_uri()
    write_deltalake(location, pa.table({"id": [1, 2], "kind": ["a", "b"]}))
    name = catalog.reference(namespace, "events")

    dag_run = run_dag(_pipeline(f"catalog_pipeline_{catalog.kind}", name, location))

    assert task_states(dag_run) == dict.fromkeys(("register", "checkpoint", "vacuum", "sensor", "describe"), "success")
    registered = xcom(dag_run, "register")
    assert (registered["operation"], registered["version"]) == ("REGISTER", 0)
    assert registered["table"] == location  # results name the location; the name is the task's argument
    entry = catalog.entry(f"{namespace}.events")
    assert entry is not None and entry.is_delta and entry.columns == [("id", "bigint"), ("kind", "string")]
    assert xcom(dag_run, "checkpoint")["version"] == 0
    assert (tmp_path / "root" / "events" / "_delta_log" / "00000000000000000000.checkpoint.parquet").exists()
    assert xcom(dag_run, "sensor")["version"] == 0
    assert xcom(dag_run, "describe")["version"] == 2  # VACUUM committed its START and END

    trigger = DeltaTableVersionTrigger(table_path=name, after_version=-1, poll_interval=0.1)
    _, kwargs = trigger.serialize()
    assert kwargs["table_path"] == name and "catalog_conn_id" not in kwargs  # unset: a path's kwargs unchanged
    event = asyncio.run(_first_event(DeltaTableVersionTrigger(**kwargs)))
    assert event.payload["version"] == 0


async def _first_event(trigger):
    async for event in trigger.run():
        return event
    raise AssertionError("the trigger ended without an event")


def _log_files(location: str, options: dict[str, str]) -> dict[str, bytes]:
    storage = open_storage(location, options)
    return {m.path: storage.get(m.path) for m in storage.list_dir("_delta_log")}


@pytest.mark.usefixtures("airflow_db")
def test_vended_credentials_write_never_leak_and_a_read_only_grant_writes_nothing(
    uc_on_azurite, uc_server, caplog, capfd
) -> None:
    from airflow.sdk import DAG

    table = uc_on_azurite
    before = _log_files(table["location"], table["keyed"])
    with DAG("catalog_vended_credentials", schedule=None) as dag:
        DeltaCheckpointOperator(task_id="checkpoint", table_path=table["name"], engine="python")
        DeltaTableVersionSensor(task_id="sensor", table_path=table["name"], after_version=-1, poke_interval=1)
        DeltaVacuumOperator(
            task_id="vacuum_as_reader",
            table_path=table["name"],
            engine="python",
            catalog_conn_id="uc_reader",
            retries=2,
        )
        DeltaTableVersionSensor(
            task_id="read_as_reader", table_path=table["name"], after_version=-1, catalog_conn_id="uc_reader"
        )
    with caplog.at_level(logging.DEBUG):
        dag_run = run_dag(dag)

    assert task_states(dag_run) == {
        "checkpoint": "success",
        "sensor": "success",
        "vacuum_as_reader": "failed",
        "read_as_reader": "success",  # a read-only grant still reads
    }
    assert task_tries(dag_run)["vacuum_as_reader"] == 1  # CatalogAccessDeniedError: permanent, no retry
    printed = capfd.readouterr()
    task_log = printed.out + printed.err + caplog.text
    assert "failed: CatalogAccessDeniedError: Unity Catalog (read-write credentials of" in task_log
    log = _log_files(table["location"], table["keyed"])
    # Written with the vended SAS: the checkpoint; the read-only VACUUM committed nothing.
    assert sorted(set(log) - set(before)) == [
        "_delta_log/00000000000000000000.checkpoint.parquet",
        "_delta_log/_last_checkpoint",
    ]
    # The SAS the server vends (it hands the same one out until it nears expiry), the tokens, the key.
    vended = uc_server.call(
        "POST",
        "/temporary-table-credentials",
        {"table_id": uc_server.table(table["full_name"])["table_id"], "operation": "READ_WRITE"},
    )["azure_user_delegation_sas"]["sas_token"]
    signature = vended.split("sig=")[1].split("&")[0]
    secrets = [signature, table["token"], table["reader_token"], AZURITE_KEY]
    places = {
        "xcom": json.dumps([xcom(dag_run, "checkpoint"), xcom(dag_run, "sensor")]),
        "log": task_log,
        "commits": b"".join(log.values()).decode("latin-1"),
        "trigger": json.dumps(DeltaTableVersionTrigger(table_path=table["name"], after_version=0).serialize()),
    }
    for place, text in places.items():
        for secret in secrets:
            assert secret not in text, f"a secret reached the {place}"


def _append(table: dict) -> None:
    """A new version, written with the account key the tasks do not have."""
    options = {k.lower(): v for k, v in table["keyed"].items()}
    write_deltalake(table["location"], pa.table({"id": [3]}), mode="append", storage_options=options)


def test_sensors_and_triggers_renew_short_lived_credentials(uc_on_azurite) -> None:
    """Credentials said to last a minute (inside the 5-minute margin) are renewed before the
    polls that follow, from the bound table's id: the name is resolved once per sensor or trigger
    run, and polls keep reading (a real SAS each time) until the new version lands."""
    table, proxy = uc_on_azurite, uc_on_azurite["proxy"]
    vends = "temporary-table-credentials"

    sensor = DeltaTableVersionSensor(task_id="wait", table_path=table["name"], after_version=0)
    assert not sensor.poke({}).is_done  # the server's own lifetime: nothing to renew
    bound = proxy.count(vends)
    assert not sensor.poke({}).is_done and proxy.count(vends) == bound

    proxy.expires_in = 60
    sensor = DeltaTableVersionSensor(task_id="wait_short", table_path=table["name"], after_version=0)
    assert not sensor.poke({}).is_done
    vended, lookups = proxy.count(vends), proxy.count("/tables/")
    assert not sensor.poke({}).is_done
    assert proxy.count(vends) > vended and proxy.count("/tables/") == lookups  # renewed, not resolved again
    _append(table)
    done = sensor.poke({})
    assert done.is_done and done.xcom_value["version"] == 1

    trigger = DeltaTableVersionTrigger(table_path=table["name"], after_version=1, poll_interval=0.05)
    assert table["name"] in json.dumps(trigger.serialize()) and "sig=" not in json.dumps(trigger.serialize())

    async def renewing_then_fired():
        started, lookups = proxy.count(vends), proxy.count("/tables/")
        waiting = asyncio.create_task(_first_event(trigger))
        while proxy.count(vends) < started + 4 and not waiting.done():
            await asyncio.sleep(0.05)
        assert not waiting.done() and proxy.count("/tables/") == lookups + 1  # one resolution, many renewals
        await asyncio.to_thread(_append, table)
        return await asyncio.wait_for(waiting, 120)

    event = asyncio.run(renewing_then_fired())
    assert event.payload["status"] == "success" and event.payload["version"] == 2


class _VacuumLostAfterItsCommit(DeltaVacuumOperator):
    """Commits, then fails its first try: a worker lost right after the commit."""

    def execute(self, context):
        result = super().execute(context)
        if context["ti"].try_number == 1:
            raise RuntimeError("worker lost after the commit")
        return result


@pytest.mark.usefixtures("airflow_db")
def test_a_retry_by_name_finds_its_commit_with_the_vended_credentials(uc_on_azurite) -> None:
    """The retry reads its earlier try's commit, and that commit's time, while the vended
    credentials are at hand: the process has no storage key to read it with afterwards."""
    from datetime import timedelta

    from airflow.sdk import DAG

    table = uc_on_azurite
    with DAG("catalog_retry_by_name", schedule=None) as dag:
        _VacuumLostAfterItsCommit(
            task_id="vacuum", table_path=table["name"], engine="python", retries=1, retry_delay=timedelta(0)
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"vacuum": "success"} and task_tries(dag_run)["vacuum"] == 2
    assert xcom(dag_run, "vacuum")["version"] == 2  # the first try's VACUUM END, not a second VACUUM
    commits = [name for name in _log_files(table["location"], table["keyed"]) if name.endswith(".json")]
    assert sorted(commits) == [f"_delta_log/0000000000000000000{v}.json" for v in range(3)]
