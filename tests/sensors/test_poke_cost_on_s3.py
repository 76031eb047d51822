"""What one poke costs on S3, counted as HTTP requests at the wire.

A proxy in front of moto counts every request that the real sensor's
``poke`` and the deferrable trigger's async poll send. The counts must be
the same on a log of 100 versions and on one of 10,000: a poke lists from
the last version seen, and never lists or reads the whole log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor
from airflow_delta_provider.triggers.delta_table import open_probe, poll_once_async
from tests.delta_logs import write_commit, write_log
from tests.storage_servers import s3_settings, upload_tree

SIZES = (100, 10_000)


@pytest.fixture(scope="module")
def local_logs(tmp_path_factory) -> dict[int, Path]:
    return {n: write_log(tmp_path_factory.mktemp(f"log{n}") / "t", n) for n in SIZES}


def test_a_poke_sends_the_same_requests_at_100_and_10000_versions(
    stoppable_s3, moto_server, local_logs, monkeypatch, tmp_path
):
    for key, value in stoppable_s3.env.items():  # the sensor's credentials: the environment
        monkeypatch.setenv(key, value)
    direct = s3_settings(moto_server.endpoint)  # uploads bypass the counting proxy
    requests = stoppable_s3.proxy.requests
    costs = {}
    for n, local in local_logs.items():
        uri = stoppable_s3.uri(f"log{n}")
        upload_tree(local, uri, direct)
        sensor = DeltaTableVersionSensor(task_id=f"wait{n}", table_path=uri, after_version=n - 1)
        probe = open_probe(uri)

        def count(fn) -> tuple[object, list[tuple[str, str]]]:
            requests.clear()
            result = fn()
            return result, list(requests)

        assert not sensor.poke({}).is_done  # the first poke also sees that the table exists
        idle, idle_sent = count(lambda sensor=sensor: sensor.poke({}))
        (found, _), async_idle_sent = count(
            lambda probe=probe, n=n: asyncio.run(
                poll_once_async(probe, n - 1, table_seen=True, wait_for_creation=False)
            )
        )
        assert not idle.is_done and found is None

        write_commit(tmp_path, n)
        name = f"_delta_log/{n:020d}.json"
        open_storage(uri, direct).put(name, (tmp_path / name).read_bytes())
        new, new_sent = count(lambda sensor=sensor: sensor.poke({}))
        (info, _), async_new_sent = count(
            lambda probe=probe, n=n: asyncio.run(
                poll_once_async(probe, n - 1, table_seen=True, wait_for_creation=False)
            )
        )
        assert new.is_done and new.xcom_value["version"] == n and info.version == n
        # Nothing but the log's tail is asked for.
        for _method, path in idle_sent + new_sent + async_idle_sent + async_new_sent:
            assert "_delta_log" in path
        costs[n] = [len(idle_sent), len(async_idle_sent), len(new_sent), len(async_new_sent)]
    assert costs[100] == costs[10_000]
    assert costs[100][:2] == [1, 1] and max(costs[100]) <= 3
