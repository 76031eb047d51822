"""DeltaTableVersionSensor: poke cost, results, missing tables, deferral and a real dag.test()."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from airflow_delta_provider.delta.errors import InvalidInputError, StorageError
from airflow_delta_provider.sensors.delta_table import BASELINE_STATE_KEY, DeltaTableVersionSensor
from airflow_delta_provider.triggers.delta_table import DeltaTableVersionTrigger
from tests.delta_logs import BASE_TS, write_commit, write_log


def _sensor(table, **kwargs) -> DeltaTableVersionSensor:
    return DeltaTableVersionSensor(task_id="wait", table_path=str(table), poke_interval=0.01, **kwargs)


# --- cost ------------------------------------------------------------------------


def _poke_costs(table, latest, log_calls):
    """Log-store calls of three pokes: first (nothing new), steady (nothing new), success."""
    sensor = _sensor(table, after_version=latest)
    costs = []
    for commit in (False, False, True):
        if commit:
            write_commit(table, latest + 1)
        log_calls.clear()
        result = sensor.poke({})
        costs.append(dict(log_calls))
    assert result.is_done and result.xcom_value["version"] == latest + 1
    return costs


def test_poke_cost_is_the_same_on_10_and_10000_versions(big_log, tmp_path, log_calls):
    small = write_log(tmp_path / "small", 10)
    small_costs = _poke_costs(small, 9, log_calls)
    big_costs = _poke_costs(big_log, 9_999, log_calls)
    assert big_costs == small_costs
    assert all("list_from" not in cost for cost in big_costs)  # never a listing
    assert big_costs[1] == {"exists": 1}  # a steady poke is one existence check


def test_first_poke_without_baseline_does_not_list(big_log, tmp_path, log_calls):
    # Finding the latest version costs as much as on a short log with the
    # same number of commits since its last checkpoint.
    short = write_log(tmp_path / "short", 20)
    costs = []
    for table, latest in ((short, 19), (big_log, 9_999)):
        sensor = _sensor(table)
        log_calls.clear()
        assert not sensor.poke({})
        costs.append(dict(log_calls))
        assert sensor._baseline == latest
        log_calls.clear()
        assert not sensor.poke({})
        assert dict(log_calls) == {"exists": 1}
    assert costs[0] == costs[1]
    assert "list_from" not in costs[1]


# --- results -----------------------------------------------------------------------


def test_succeeds_with_the_latest_version_and_its_commit_info(tmp_path):
    table = write_log(tmp_path / "t", 3)
    sensor = _sensor(table, after_version=0)
    write_commit(table, 3, operation="MERGE")
    result = sensor.poke({})
    assert isinstance(result, PokeReturnValue) and result.is_done
    assert result.xcom_value == {
        "version": 3,
        "versions": [1, 2, 3],
        "skipped_versions": [],
        "baseline_version": 0,
        "table": str(table),
        "timestamp": BASE_TS + 3000,
        "operation": "MERGE",
    }


def test_baseline_is_the_version_seen_at_the_first_poke(tmp_path):
    table = write_log(tmp_path / "t", 4)
    sensor = _sensor(table)
    assert not sensor.poke({})
    assert not sensor.poke({})
    write_commit(table, 4)
    write_commit(table, 5)
    result = sensor.poke({})
    assert (result.xcom_value["version"], result.xcom_value["baseline_version"]) == (5, 3)


def test_execute_in_poke_mode_returns_the_result(tmp_path):
    table = write_log(tmp_path / "t", 2)
    assert _sensor(table, after_version=0).execute({})["version"] == 1


def test_after_version_is_templated_and_parsed(tmp_path):
    assert set(DeltaTableVersionSensor.template_fields) == {"table_path", "after_version", "operations", "partition"}
    table = write_log(tmp_path / "t", 3)
    assert _sensor(table, after_version="1").poke({}).xcom_value["version"] == 2
    assert not _sensor(table, after_version="2").poke({})
    with pytest.raises(InvalidInputError, match="integer"):
        _sensor(table, after_version="latest").poke({})
    with pytest.raises(InvalidInputError, match="-1 or more"):
        _sensor(table, after_version=-5).poke({})


@pytest.mark.parametrize("rendered", ["None", "", "null"])
def test_after_version_of_an_upstream_that_committed_nothing_succeeds_at_once(tmp_path, rendered):
    """``{{ ti.xcom_pull('update')['version'] }}`` renders "None" when the update matched
    no row: no commit is owed, so the sensor succeeds at its first poke with the latest
    version, rather than wait for a commit a rerun never makes (issue 39)."""
    table = write_log(tmp_path / "t", 3)
    result = _sensor(table, after_version=rendered).poke({})
    assert result.is_done
    assert {k: result.xcom_value[k] for k in ("version", "versions", "baseline_version")} == {
        "version": 2,
        "versions": [],
        "baseline_version": 2,
    }


def test_without_after_version_the_baseline_is_the_latest_version(tmp_path):
    table = write_log(tmp_path / "t", 3)
    sensor = _sensor(table)
    assert not sensor.poke({})
    write_commit(table, 3)
    assert sensor.poke({}).xcom_value["version"] == 3


def test_sets_the_result_as_outlet_event_extra(tmp_path):
    from airflow.sdk import Asset

    class Accessor:
        def __init__(self) -> None:
            self.extra: dict = {}

    table = write_log(tmp_path / "t", 2)
    asset = Asset(name="orders_ready", uri="file:///ready/orders")
    events = {asset: Accessor()}
    sensor = _sensor(table, after_version=0, outlets=[asset])
    result = sensor.poke({"outlet_events": events})
    assert events[asset].extra == result.xcom_value


def test_drops_an_outlet_on_the_tables_own_asset(tmp_path):
    """That asset has one event per version from the table's writers or its watcher;
    Airflow would record one more for the sensor's outlet (issue 39)."""
    from airflow.sdk import Asset

    table = write_log(tmp_path / "t", 2)
    own, other = Asset(name="orders", uri=table.as_uri()), Asset(name="orders_ready", uri="file:///ready/orders")
    sensor = _sensor(table, after_version=0, outlets=[own, other])
    assert sensor.poke({}).is_done
    assert sensor.outlets == [other]


def test_reschedule_mode_keeps_its_baseline_in_the_task_state_store(tmp_path):
    class TaskStateStore(dict):
        def set(self, key, value):
            self[key] = value

    table = write_log(tmp_path / "t", 3)
    context = {"task_state_store": TaskStateStore()}
    assert not _sensor(table, mode="reschedule").poke(context)
    assert context["task_state_store"] == {BASELINE_STATE_KEY: 2}
    write_commit(table, 3)
    # Each reschedule builds a new sensor object: the baseline comes back from the store.
    result = _sensor(table, mode="reschedule").poke(context)
    assert (result.xcom_value["version"], result.xcom_value["baseline_version"]) == (3, 2)


def test_reads_a_table_written_by_delta_rs(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa

    uri = str(tmp_path / "rs")
    for n in range(3):
        deltalake.write_deltalake(uri, pa.table({"id": [n]}), mode="append")
    history = {h["version"]: h for h in deltalake.DeltaTable(uri).history()}
    result = _sensor(uri, after_version=0).poke({}).xcom_value
    assert result["version"] == 2
    assert result["operation"] == history[2]["operation"]
    assert result["timestamp"] == history[2]["timestamp"]


# --- missing tables ---------------------------------------------------------------------


@pytest.mark.parametrize("after_version", [None, 3])
def test_missing_table_fails_with_its_path_and_no_retry(tmp_path, after_version):
    path = tmp_path / "nowhere"
    with pytest.raises(AirflowFailException, match=r"TableNotFoundError: .*nowhere.*wait_for_creation"):
        _sensor(path, after_version=after_version).poke({})


def test_wait_for_creation_then_succeeds_on_version_0(tmp_path):
    path = tmp_path / "later"
    sensor = _sensor(path, wait_for_creation=True)
    assert not sensor.poke({})
    assert not sensor.poke({})
    write_commit(path, 0)
    assert sensor.poke({}).xcom_value["version"] == 0


# --- deferrable --------------------------------------------------------------------------


def test_defers_to_the_version_trigger_with_the_baseline(tmp_path):
    table = write_log(tmp_path / "t", 5)
    sensor = _sensor(table, deferrable=True, timeout=120, wait_for_creation=True)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeltaTableVersionTrigger)
    assert trigger.serialize()[1] == {
        "table_path": str(table),
        "after_version": 4,
        "poll_interval": 0.01,
        "wait_for_creation": True,
        "storage_conn_id": None,
        "data_changes_only": True,
        "operations": None,
        "partition": None,
        "baseline_version": 4,
        "skipped_versions": [],
    }
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout.total_seconds() == 120


def test_deferrable_returns_at_once_when_already_newer(tmp_path):
    table = write_log(tmp_path / "t", 5)
    assert _sensor(table, deferrable=True, after_version=1).execute({})["version"] == 4


def test_deferrable_fails_fast_on_a_missing_table(tmp_path):
    with pytest.raises(AirflowFailException, match="TableNotFoundError"):
        _sensor(tmp_path / "none", deferrable=True).execute({})


async def test_execute_complete_takes_the_trigger_event(tmp_path):
    table = write_log(tmp_path / "t", 5)
    trigger = DeltaTableVersionTrigger(table_path=str(table), after_version=2, poll_interval=0.01)
    event = await trigger.run().__anext__()
    result = _sensor(table, deferrable=True).execute_complete({}, event.payload)
    assert result == {
        "version": 4,
        "versions": [3, 4],
        "skipped_versions": [],
        "baseline_version": 2,
        "table": str(table),
        "timestamp": BASE_TS + 4000,
        "operation": "WRITE",
    }


def test_execute_complete_raises_the_trigger_error(tmp_path):
    """A missing table fails without retries; an error a retry may mend keeps its type."""
    event = {"status": "error", "error_type": "TableNotFoundError", "message": "no table at x"}
    with pytest.raises(AirflowFailException, match="TableNotFoundError: no table at x"):
        _sensor(tmp_path, deferrable=True).execute_complete({}, event)
    event = {"status": "error", "error_type": "StorageError", "message": "the store is down"}
    with pytest.raises(StorageError, match="the store is down"):
        _sensor(tmp_path, deferrable=True).execute_complete({}, event)


# --- parse cost ------------------------------------------------------------------------------


def test_importing_the_sensor_and_triggers_stays_light():
    code = (
        "import sys\n"
        "import airflow_delta_provider.sensors.delta_table\n"
        "import airflow_delta_provider.triggers.delta_table\n"
        "heavy = sorted(m for m in ('pyarrow', 'pyspark') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- a real Airflow run ------------------------------------------------------------------------


def test_deferrable_sensor_in_dag_test(airflow_db, tmp_path, monkeypatch):
    """Upstream XCom -> templated after_version -> deferral -> trigger -> execute_complete."""
    from airflow.sdk import DAG, task

    from tests.airflow_env import run_dag, task_states, xcom

    table = write_log(tmp_path / "t", 3)
    trigger_started = threading.Event()
    original_run = DeltaTableVersionTrigger.run

    def run(self):
        trigger_started.set()
        return original_run(self)

    monkeypatch.setattr(DeltaTableVersionTrigger, "run", run)

    def commit_once_deferred():
        trigger_started.wait(timeout=300)
        write_commit(table, 3, operation="DELETE")

    with DAG(dag_id="delta_sensor_deferrable", schedule=None) as dag:

        @task
        def last_change():
            return {"version": 2}

        wait = DeltaTableVersionSensor(
            task_id="wait",
            table_path=str(table),
            after_version="{{ ti.xcom_pull(task_ids='last_change')['version'] }}",
            deferrable=True,
            poke_interval=0.05,
            timeout=300,
        )
        last_change() >> wait

    writer = threading.Thread(target=commit_once_deferred, daemon=True)
    writer.start()
    dag_run = run_dag(dag)
    writer.join()
    assert trigger_started.is_set()
    assert task_states(dag_run) == {"last_change": "success", "wait": "success"}
    result = xcom(dag_run, "wait")
    assert result["version"] == 3
    assert result["baseline_version"] == 2
    assert result["operation"] == "DELETE"
