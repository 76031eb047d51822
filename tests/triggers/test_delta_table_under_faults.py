"""The triggers polling a table on S3 through store outages (the fault proxy
answering 503 to every request, beyond the store's own retries).

A poll that fails on a transient store error neither ends the trigger nor
sends an error event: the first one of an outage logs one warning, the next
ones nothing, the first poll that answers again one line; no version
committed meanwhile is skipped.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger, DeltaTableVersionTrigger
from tests.delta_logs import write_commit, write_log
from tests.fault_proxy import OUTAGE
from tests.storage_servers import s3_settings, upload_tree

WARNING = "polling on until the store answers"


@pytest.fixture
def store(s3_out_of_reach):
    return s3_out_of_reach


def _put_commit_directly(local, uri: str, version: int, moto_server) -> None:
    """Commit ``version`` straight to moto, past the proxy."""
    from airflow_delta_provider.delta.storage import open_storage

    write_commit(local, version, operation="WRITE")
    name = f"_delta_log/{version:020d}.json"
    open_storage(uri, s3_settings(moto_server.endpoint)).put(name, (local / name).read_bytes())


def _log(capfd) -> str:
    """What the trigger logged (Airflow's loggers write to the process's output)."""
    out, err = capfd.readouterr()
    return out + err


async def test_version_trigger_polls_through_an_outage(store, moto_server, tmp_path, capfd):
    local, uri = tmp_path / "local", store.uri("t")
    await asyncio.to_thread(upload_tree, write_log(local, 3), uri)
    trigger = DeltaTableVersionTrigger(table_path=uri, after_version=2, poll_interval=0.05)
    store.faults.requests.clear()
    pending = asyncio.ensure_future(trigger.run().__anext__())
    while not store.faults.requests:  # the trigger polls
        await asyncio.sleep(0.05)
    with store.faults.inject(OUTAGE) as hit:
        await asyncio.sleep(0.4)  # several failed polls
        await asyncio.to_thread(_put_commit_directly, local, uri, 3, moto_server)
        await asyncio.sleep(0.3)
        assert not pending.done()
    event = await asyncio.wait_for(pending, 30)
    assert len(hit) >= 3
    assert (event.payload["status"], event.payload["version"], event.payload["versions"]) == ("success", 3, [3])
    log = _log(capfd)
    assert log.count(WARNING) == 1 and store.secret not in log
    assert "answers again after" in log


async def test_event_trigger_warns_once_per_outage_and_skips_no_version(store, moto_server, tmp_path, capfd):
    local, uri = tmp_path / "local", store.uri("t")
    await asyncio.to_thread(upload_tree, write_log(local, 2), uri)
    trigger = DeltaTableEventTrigger(table_path=uri, after_version=1, poll_interval=0.05)
    events = trigger.run()
    seen: list[int] = []
    for version in (2, 3):
        pending = asyncio.ensure_future(events.__anext__())
        with store.faults.inject(OUTAGE):
            await asyncio.sleep(0.3)
            await asyncio.to_thread(_put_commit_directly, local, uri, version, moto_server)
            await asyncio.sleep(0.3)
            assert not pending.done()
        seen.extend((await asyncio.wait_for(pending, 30)).payload["versions"])
    await events.aclose()
    assert seen == [2, 3]
    log = _log(capfd)
    assert log.count(WARNING) == 2 and log.count("answers again after") == 2  # two outages
