"""The sensors polling a table on S3 through store outages (the fault proxy
answering 503 to every request, beyond the store's own retries).

A poke that fails on a transient store error does not fail the task: the
first one of an outage logs one warning, the next ones nothing, and the first
poke that answers again logs one line. No version committed during the
outage is skipped. Refused credentials still fail at once.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.sensors.delta_table import DeltaPartitionSensor, DeltaTableVersionSensor
from tests.delta.conftest import create_table, write_data_file
from tests.fault_proxy import OUTAGE
from tests.storage_servers import s3_settings

SCHEMA = pa.schema([("id", pa.int64()), ("ds", pa.string())])
WARNING = "polling on until the store answers"


@pytest.fixture
def store(s3_out_of_reach):
    return s3_out_of_reach


def _append(uri: str, moto_server, ids: list[int], ds: str) -> None:
    """Commit rows of partition ``ds`` straight to moto (not through the proxy)."""
    with pytest.MonkeyPatch.context() as env:
        for key, value in s3_settings(moto_server.endpoint).items():
            env.setenv(key, value)
        rows = pa.table({"id": ids}, schema=pa.schema([("id", pa.int64())]))
        add = write_data_file(uri, rows, partition_values={"ds": ds})
        table = DeltaTable(uri)
        if not table.exists():
            create_table(uri, SCHEMA, partition_columns=["ds"], adds=[add])
            return
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
        txn.add(add)
        txn.commit(metrics={})


def _log(capfd) -> str:
    """What the task logged (Airflow's task logger writes to the process's output)."""
    out, err = capfd.readouterr()
    return out + err


def test_version_sensor_pokes_through_an_outage_and_skips_no_version(store, moto_server, capfd):
    uri = store.uri("t")
    _append(uri, moto_server, [0], "d0")
    sensor = DeltaTableVersionSensor(task_id="wait", table_path=uri, after_version=0, poke_interval=0.01)
    assert not sensor.poke({})
    with store.faults.inject(OUTAGE) as hit:
        for _ in range(3):
            assert not sensor.poke({})
        _append(uri, moto_server, [1], "d1")  # version 1 lands during the outage
        assert not sensor.poke({})
    assert len(hit) >= 4
    result = sensor.poke({})
    assert result.is_done and result.xcom_value["version"] == 1 and result.xcom_value["versions"] == [1]
    log = _log(capfd)
    assert log.count(WARNING) == 1 and store.secret not in log
    assert "answers again after 4 failed polls" in log


def test_partition_sensor_pokes_through_an_outage(store, moto_server, capfd):
    uri = store.uri("t")
    _append(uri, moto_server, [0], "d0")
    sensor = DeltaPartitionSensor(task_id="part", table_path=uri, partition={"ds": "d1"}, poke_interval=0.01)
    assert not sensor.poke({})
    with store.faults.inject(OUTAGE):
        assert not sensor.poke({})
        _append(uri, moto_server, [1, 2], "d1")
        assert not sensor.poke({})
    result = sensor.poke({})
    assert result.is_done and (result.xcom_value["version"], result.xcom_value["num_records"]) == (1, 2)
    assert _log(capfd).count(WARNING) == 1
