"""The triggers on S3 and Azure: they fire on new versions, and every store
request they make goes through obstore's async API, so the triggerer's event
loop is never blocked by a request.

Each blocking method of the object store is replaced, for the test, by one
that fails; the only calls left to the loop are the async twins.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_delta_provider.delta.storage import ObjectStorage, open_storage
from airflow_delta_provider.triggers.delta_table import DeltaTableEventTrigger, DeltaTableVersionTrigger
from tests.delta_logs import write_commit, write_log
from tests.storage_servers import upload_tree

BLOCKING = ("list_dir", "list_top", "list_tree", "get", "head", "exists", "open_input_file")


@pytest.fixture(params=["s3_bucket", "azure_container"])
def store(request, monkeypatch):
    backend = request.getfixturevalue(request.param)
    for key, value in backend.env.items():  # the triggerer's own chain: its environment
        monkeypatch.setenv(key, value)
    return backend


@pytest.fixture
def no_blocking_calls(monkeypatch):
    """Fail any blocking store request made from a running event loop."""

    def guard(name):
        real = getattr(ObjectStorage, name)

        def call(self, *args, **kwargs):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return real(self, *args, **kwargs)  # a worker thread (asyncio.to_thread): fine
            raise AssertionError(f"blocking ObjectStorage.{name} called on the event loop")

        return call

    for name in BLOCKING:
        monkeypatch.setattr(ObjectStorage, name, guard(name))


def _put_commit(tmp_path, uri: str, version: int) -> None:
    write_commit(tmp_path, version, operation="UPDATE", partition_value="d1")
    name = f"_delta_log/{version:020d}.json"
    open_storage(uri).put(name, (tmp_path / name).read_bytes())


async def test_version_trigger_waits_for_a_commit_without_blocking(store, tmp_path, no_blocking_calls):
    uri = store.uri("t")
    await asyncio.to_thread(upload_tree, write_log(tmp_path / "local", 3), uri)
    trigger = DeltaTableVersionTrigger(table_path=uri, after_version=2, poll_interval=0.05)
    pending = asyncio.ensure_future(trigger.run().__anext__())
    await asyncio.sleep(0.5)  # several empty polls
    assert not pending.done()
    await asyncio.to_thread(_put_commit, tmp_path / "local", uri, 3)
    event = await asyncio.wait_for(pending, 30)
    assert (event.payload["status"], event.payload["version"], event.payload["operation"]) == ("success", 3, "UPDATE")


async def test_event_trigger_fires_on_new_versions_without_blocking(store, tmp_path, no_blocking_calls):
    uri = store.uri("t")
    await asyncio.to_thread(upload_tree, write_log(tmp_path / "local", 2, partition_value="d0"), uri)
    # The partition filter reads the table's partitioning first (a snapshot, in a thread).
    trigger = DeltaTableEventTrigger(table_path=uri, poll_interval=0.05, partition="ds IN ('d0', 'd1')")
    events = trigger.run()
    first = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.5)
    assert not first.done()  # the baseline is the latest version: nothing new yet
    for version in (2, 3):
        await asyncio.to_thread(_put_commit, tmp_path / "local", uri, version)
    got = (await asyncio.wait_for(first, 30)).payload["versions"]
    if got != [2, 3]:  # the two commits fell on two polls
        got += (await asyncio.wait_for(events.__anext__(), 30)).payload["versions"]
    assert got == [2, 3]
    await events.aclose()
