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
from airflow_delta_provider.triggers.delta_table import open_probe, open_watch, poll_once_async
from tests.delta_logs import write_commit, write_log
from tests.storage_servers import s3_settings, upload_tree

SIZES = (100, 10_000)

#: The sensor's filters: each poke must cost the same at both log lengths.
FILTERS = {
    "every_commit": {"data_changes_only": False},
    "data_changes": {},
    "operations": {"operations": ["WRITE"]},
    "partition": {"partition": {"ds": "d1"}},
}


@pytest.fixture(scope="module")
def local_logs(tmp_path_factory) -> dict[int, Path]:
    """Partitioned logs, with a real checkpoint where ``_last_checkpoint`` points:
    a partition filter reads the snapshot once, at the first poke."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.table import DeltaTable

    logs = {}
    for n in SIZES:
        root = write_log(tmp_path_factory.mktemp(f"log{n}") / "t", n, partition_value="d0")
        table = DeltaTable(str(root))
        write_checkpoint(table, table.snapshot((n - 1) // 10 * 10))
        logs[n] = root
    return logs


def test_a_poke_sends_the_same_requests_at_100_and_10000_versions(
    stoppable_s3, moto_server, local_logs, monkeypatch, tmp_path
):
    for key, value in stoppable_s3.env.items():  # the sensor's credentials: the environment
        monkeypatch.setenv(key, value)
    direct = s3_settings(moto_server.endpoint)  # uploads bypass the counting proxy
    requests = stoppable_s3.proxy.requests

    def count(fn) -> tuple[object, list[tuple[str, str]]]:
        requests.clear()
        result = fn()
        return result, list(requests)

    costs: dict[str, dict[int, list[int]]] = {name: {} for name in FILTERS}
    for n, local in local_logs.items():
        uri = stoppable_s3.uri(f"log{n}")
        upload_tree(local, uri, direct)
        # Each filter in turn waits for one more commit, in partition d1.
        for latest, (name, filters) in enumerate(FILTERS.items(), start=n - 1):
            sensor = DeltaTableVersionSensor(task_id=f"wait{n}", table_path=uri, after_version=latest, **filters)
            watch = open_watch(open_probe(uri), latest, **filters)
            # The first polls also see that the table exists and read its partitioning.
            assert not sensor.poke({}).is_done
            asyncio.run(poll_once_async(watch, table_seen=True, wait_for_creation=False))
            idle, idle_sent = count(lambda sensor=sensor: sensor.poke({}))
            (found, _), async_idle_sent = count(
                lambda watch=watch: asyncio.run(poll_once_async(watch, table_seen=True, wait_for_creation=False))
            )
            assert not idle.is_done and found is None

            write_commit(tmp_path / str(n), latest + 1, partition_value="d1")
            commit = f"_delta_log/{latest + 1:020d}.json"
            open_storage(uri, direct).put(commit, (tmp_path / str(n) / commit).read_bytes())
            new, new_sent = count(lambda sensor=sensor: sensor.poke({}))
            (fired, _), async_new_sent = count(
                lambda watch=watch: asyncio.run(poll_once_async(watch, table_seen=True, wait_for_creation=False))
            )
            assert new.is_done and new.xcom_value["version"] == latest + 1 == fired.last.version, name
            # Nothing but the log's tail is asked for.
            for _method, path in idle_sent + new_sent + async_idle_sent + async_new_sent:
                assert "_delta_log" in path
            costs[name][n] = [len(idle_sent), len(async_idle_sent), len(new_sent), len(async_new_sent)]
    for name, by_size in costs.items():
        assert by_size[100] == by_size[10_000], name
        assert by_size[100][:2] == [1, 1] and max(by_size[100]) <= 3, (name, by_size)
