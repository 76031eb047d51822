"""The sensors' filters and DeltaPartitionSensor, on tables delta-rs writes."""

from __future__ import annotations

import asyncio

import pytest
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.sensors.delta_table import (
    CURSOR_STATE_KEY,
    SKIPPED_STATE_KEY,
    DeltaPartitionSensor,
    DeltaTableVersionSensor,
)
from airflow_delta_provider.triggers.delta_table import DeltaPartitionTrigger, DeltaTableVersionTrigger
from tests.delta_rs_history import DAY_1, DAY_2, DAY_3, EXPECTED, append, write_mixed_history

deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    return write_mixed_history(tmp_path_factory.mktemp("mixed") / "t")


def _sensor(table, **kwargs) -> DeltaTableVersionSensor:
    return DeltaTableVersionSensor(task_id="wait", table_path=str(table), poke_interval=0.01, **kwargs)


def _partition_sensor(table, **kwargs) -> DeltaPartitionSensor:
    return DeltaPartitionSensor(task_id="part", table_path=str(table), poke_interval=0.01, **kwargs)


class TaskStateStore(dict):
    def set(self, key, value):
        self[key] = value


# --- DeltaTableVersionSensor's filters ------------------------------------------------


@pytest.mark.parametrize(("filters", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
def test_each_filter_fires_on_the_expected_versions(history, filters, expected):
    result = _sensor(history, after_version=-1, **filters).poke({})
    if not expected:
        assert not result.is_done
        return
    assert result.is_done
    assert result.xcom_value["version"] == expected[-1]
    assert result.xcom_value["versions"] == expected
    assert result.xcom_value["skipped_versions"] == [v for v in range(8) if v not in expected]


async def _first_payload(trigger, seconds: float = 0.5) -> dict | None:
    """The trigger's first event, or None when it fires nothing within ``seconds``."""
    events = trigger.run()
    try:
        return (await asyncio.wait_for(events.__anext__(), seconds)).payload
    except asyncio.TimeoutError:
        return None
    finally:
        await events.aclose()


@pytest.mark.parametrize(("filters", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
def test_the_deferred_trigger_fires_on_the_same_versions(history, filters, expected):
    trigger = DeltaTableVersionTrigger(table_path=history, after_version=-1, poll_interval=0.01, **filters)
    payload = asyncio.run(_first_payload(trigger))
    if not expected:
        assert payload is None
        return
    assert (payload["status"], payload["version"], payload["versions"]) == ("success", expected[-1], expected)


def test_maintenance_commits_do_not_wake_the_default_sensor(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    append(uri, DAY_3, 1)  # 8
    append(uri, DAY_3, 1, start=5)  # 9: two small files for OPTIMIZE to compact
    sensor = _sensor(uri, after_version=9)
    deltalake.DeltaTable(uri).optimize.compact()  # 10
    deltalake.DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)  # 11, 12
    deltalake.DeltaTable(uri).alter.set_table_properties({"delta.appendOnly": "false"})  # 13
    operations = [h["operation"] for h in sorted(deltalake.DeltaTable(uri).history(), key=lambda h: h["version"])]
    assert operations[10:] == ["OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"]
    assert not sensor.poke({})
    append(uri, DAY_3, 1, start=9)  # 14
    result = sensor.poke({}).xcom_value
    assert (result["version"], result["versions"], result["skipped_versions"]) == (14, [14], [10, 11, 12, 13])
    assert result["baseline_version"] == 9 and result["operation"] == "WRITE"


def test_reschedule_mode_keeps_what_it_read_in_the_task_state_store(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    context = {"task_state_store": TaskStateStore()}
    assert not _sensor(uri, mode="reschedule", partition={"ds": DAY_3}).poke(context)  # baseline 7
    append(uri, DAY_2, 1)  # 8: another partition
    assert not _sensor(uri, mode="reschedule", partition={"ds": DAY_3}).poke(context)
    assert (context["task_state_store"][CURSOR_STATE_KEY], context["task_state_store"][SKIPPED_STATE_KEY]) == (8, [8])
    append(uri, DAY_3, 1)  # 9
    result = _sensor(uri, mode="reschedule", partition={"ds": DAY_3}).poke(context).xcom_value
    assert (result["version"], result["skipped_versions"], result["baseline_version"]) == (9, [8], 7)


def test_defers_with_its_filters_and_what_it_skipped(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    sensor = _sensor(uri, after_version=3, deferrable=True, timeout=60, operations=["DELETE"], partition={"ds": DAY_2})
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    kwargs = deferred.value.trigger.serialize()[1]
    assert (kwargs["after_version"], kwargs["baseline_version"], kwargs["skipped_versions"]) == (7, 3, [4, 5, 6, 7])
    assert (kwargs["operations"], kwargs["partition"], kwargs["data_changes_only"]) == (["DELETE"], {"ds": DAY_2}, True)


def test_filters_are_templated_and_checked(history):
    assert {"operations", "partition"} <= set(DeltaTableVersionSensor.template_fields)
    with pytest.raises(InvalidInputError, match="reads day, which is not a partition column"):
        _sensor(history, after_version=1, partition={"day": DAY_1}).poke({})
    with pytest.raises(InvalidInputError, match="list of operation names"):
        _sensor(history, after_version=1, operations="WRITE").poke({})


# --- DeltaPartitionSensor ----------------------------------------------------------------------


def test_partition_sensor_poke_ready_and_not_ready(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    ready = _partition_sensor(uri, partition={"ds": DAY_1}).poke({})
    assert ready.is_done
    assert ready.xcom_value == {
        "version": 7, "num_files": 1, "num_records": 4, "partition": {"ds": DAY_1}, "table": uri,
    }  # fmt: skip
    sensor = _partition_sensor(uri, partition=f"ds = '{DAY_3}'", min_records="2")  # templated: a string
    assert not sensor.poke({})
    append(uri, DAY_3, 1)
    assert not sensor.poke({})
    append(uri, DAY_3, 1, start=5)
    assert sensor.poke({}).xcom_value["version"] == 9


def test_partition_sensor_defers_and_its_trigger_fires(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    sensor = _partition_sensor(uri, partition={"ds": DAY_3}, deferrable=True, timeout=60)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeltaPartitionTrigger)
    assert trigger.serialize()[1] == {
        "table_path": uri, "partition": {"ds": DAY_3}, "min_records": None, "poll_interval": 0.01,
        "wait_for_creation": False, "storage_conn_id": None,
    }  # fmt: skip

    async def fire():
        events = trigger.run()
        pending = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.2)
        assert not pending.done()
        await asyncio.to_thread(append, uri, DAY_3, 2)
        return (await asyncio.wait_for(pending, 30)).payload

    payload = asyncio.run(fire())
    assert payload == {"status": "success", "version": 8, "num_files": 1, "num_records": 2,
                       "partition": {"ds": DAY_3}, "table": uri}  # fmt: skip
    result = sensor.execute_complete({}, payload)
    assert result["version"] == 8 and "status" not in result


def test_partition_sensor_on_a_missing_table(tmp_path):
    missing = str(tmp_path / "none")
    with pytest.raises(AirflowFailException, match=r"TableNotFoundError: .*wait_for_creation"):
        _partition_sensor(missing, partition={"ds": DAY_1}).poke({})
    sensor = _partition_sensor(missing, partition={"ds": DAY_1}, wait_for_creation=True)
    assert not sensor.poke({})
    append(missing, DAY_1, 1)
    assert sensor.poke({}).xcom_value["version"] == 0


def test_partition_sensor_refuses_bad_arguments(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    with pytest.raises(InvalidInputError, match="min_records must be a positive integer"):
        _partition_sensor(uri, partition={"ds": DAY_1}, min_records="many").poke({})
    with pytest.raises(InvalidInputError, match="reads id, which is not a partition column"):
        _partition_sensor(uri, partition={"id": 1}).poke({})
