"""DeltaTableVersionTrigger, DeltaTableEventTrigger and the VersionProbe under them."""

from __future__ import annotations

import asyncio

from airflow.triggers.base import BaseEventTrigger

from airflow_delta_provider.delta.errors import TableNotFoundError
from airflow_delta_provider.triggers.delta_table import (
    WATERMARK_KEY,
    DeltaTableEventTrigger,
    DeltaTableVersionTrigger,
)
from tests.delta_logs import BASE_TS, delete_commits, write_commit, write_log


def _rebuild(trigger):
    """Re-create a trigger the way the triggerer does: import the classpath, pass the kwargs."""
    import importlib

    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)


class FakeAssetStateStore:
    """The ``aget``/``aset`` surface of Airflow's AssetStateStoreAccessors, in memory."""

    def __init__(self):
        self.values: dict = {}
        self.writes: list = []
        self.written = asyncio.Event()

    async def aget(self, key, default=None):
        return self.values.get(key, default)

    async def aset(self, key, value):
        assert value is not None  # the real store refuses None
        self.values[key] = value
        self.writes.append((key, value))
        self.written.set()


# --- DeltaTableVersionTrigger -------------------------------------------------------


def test_version_trigger_serialize_round_trip(tmp_path):
    trigger = DeltaTableVersionTrigger(
        table_path=str(tmp_path), after_version=7, poll_interval=2.5, wait_for_creation=True, storage_conn_id="s3"
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_delta_provider.triggers.delta_table.DeltaTableVersionTrigger"
    assert kwargs == {
        "table_path": str(tmp_path),
        "after_version": 7,
        "poll_interval": 2.5,
        "wait_for_creation": True,
        "storage_conn_id": "s3",
    }
    assert _rebuild(trigger).serialize() == (classpath, kwargs)


async def test_version_trigger_fires_on_an_existing_newer_version(tmp_path):
    root = write_log(tmp_path / "t", 6)
    trigger = DeltaTableVersionTrigger(table_path=str(root), after_version=2, poll_interval=0.01)
    event = await trigger.run().__anext__()
    assert event.payload == {
        "status": "success",
        "version": 5,
        "baseline_version": 2,
        "table": str(root),
        "timestamp": BASE_TS + 5000,
        "operation": "WRITE",
    }


async def test_version_trigger_waits_for_a_commit(tmp_path):
    root = write_log(tmp_path / "t", 3)
    trigger = DeltaTableVersionTrigger(table_path=str(root), after_version=2, poll_interval=0.01)
    pending = asyncio.ensure_future(trigger.run().__anext__())
    await asyncio.sleep(0.1)  # several empty polls
    assert not pending.done()
    write_commit(root, 3, operation="UPDATE")
    event = await pending
    assert (event.payload["version"], event.payload["operation"]) == (3, "UPDATE")


async def test_version_trigger_reports_a_missing_table(tmp_path):
    trigger = DeltaTableVersionTrigger(table_path=str(tmp_path / "none"), after_version=-1)
    event = await trigger.run().__anext__()
    assert event.payload["status"] == "error"
    assert event.payload["error_type"] == TableNotFoundError.__name__
    assert str(tmp_path / "none") in event.payload["message"]


async def test_version_trigger_can_wait_for_creation(tmp_path):
    root = tmp_path / "later"
    trigger = DeltaTableVersionTrigger(
        table_path=str(root), after_version=-1, poll_interval=0.01, wait_for_creation=True
    )
    pending = asyncio.ensure_future(trigger.run().__anext__())
    await asyncio.sleep(0.1)
    assert not pending.done()
    write_commit(root, 0)
    event = await pending
    assert (event.payload["status"], event.payload["version"]) == ("success", 0)


# --- DeltaTableEventTrigger -----------------------------------------------------------


def test_event_trigger_is_an_event_trigger_and_round_trips(tmp_path):
    trigger = DeltaTableEventTrigger(table_path=str(tmp_path), poll_interval=3.0, after_version=4)
    assert isinstance(trigger, BaseEventTrigger)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_delta_provider.triggers.delta_table.DeltaTableEventTrigger"
    assert kwargs == {"table_path": str(tmp_path), "poll_interval": 3.0, "after_version": 4, "storage_conn_id": None}
    assert _rebuild(trigger).serialize() == (classpath, kwargs)
    # The triggerer identifies watchers by this hash: it must be stable across a rebuild.
    assert BaseEventTrigger.hash(classpath, kwargs) == BaseEventTrigger.hash(*_rebuild(trigger).serialize())


def _event_trigger(root, store, **kwargs):
    trigger = DeltaTableEventTrigger(table_path=str(root), poll_interval=0.01, **kwargs)
    trigger.asset_state_store = store  # what the triggerer injects before run()
    return trigger


async def _take(events, n):
    return [(await events.__anext__()).payload for _ in range(n)]


async def test_event_trigger_fires_once_per_version_in_order(tmp_path):
    root = write_log(tmp_path / "t", 10)
    store = FakeAssetStateStore()
    events = _event_trigger(root, store).run()
    first = asyncio.ensure_future(events.__anext__())
    await store.written.wait()  # the baseline is stored before the first poll
    assert store.values == {WATERMARK_KEY: 9}
    await asyncio.sleep(0.1)
    assert not first.done()  # existing versions are not new

    for version in (10, 11, 12):  # three commits between two polls
        write_commit(root, version)
    payloads = [(await first).payload, *await _take(events, 2)]
    assert [p["version"] for p in payloads] == [10, 11, 12]
    assert payloads[0] == {
        "version": 10,
        "table": str(root),
        "timestamp": BASE_TS + 10_000,
        "operation": "WRITE",
    }
    assert store.values[WATERMARK_KEY] == 12

    # Nothing more until the next commit, and then exactly that version.
    nxt = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.1)
    assert not nxt.done()
    write_commit(root, 13, operation="DELETE")
    assert (await nxt).payload["version"] == 13
    await events.aclose()
    assert [v for _, v in store.writes] == [9, 10, 11, 12, 13]


async def test_event_trigger_resumes_from_the_stored_watermark(tmp_path):
    root = write_log(tmp_path / "t", 5)
    store = FakeAssetStateStore()
    store.values[WATERMARK_KEY] = 2  # a previous triggerer fired up to version 2
    events = _event_trigger(root, store).run()
    assert [p["version"] for p in await _take(events, 2)] == [3, 4]
    await events.aclose()

    # A restarted triggerer (new instance, same store) does not fire 3 and 4 again.
    write_commit(root, 5)
    restarted = _event_trigger(root, store).run()
    assert (await restarted.__anext__()).payload["version"] == 5
    await restarted.aclose()


async def test_event_trigger_baseline_and_table_creation(tmp_path):
    root = tmp_path / "later"
    store = FakeAssetStateStore()
    events = _event_trigger(root, store).run()
    pending = asyncio.ensure_future(events.__anext__())
    await store.written.wait()
    assert store.values == {WATERMARK_KEY: -1}
    write_commit(root, 0)
    assert (await pending).payload["version"] == 0
    await events.aclose()

    # An explicit after_version is only the baseline when nothing is stored.
    other = FakeAssetStateStore()
    write_commit(root, 1)
    events = _event_trigger(root, other, after_version=-1).run()
    assert [p["version"] for p in await _take(events, 2)] == [0, 1]
    await events.aclose()


async def test_event_trigger_skips_versions_lost_to_log_cleanup(tmp_path):
    root = write_log(tmp_path / "t", 13)  # _last_checkpoint -> 10
    delete_commits(root, 7)
    store = FakeAssetStateStore()
    store.values[WATERMARK_KEY] = 2
    events = _event_trigger(root, store).run()
    assert [p["version"] for p in await _take(events, 6)] == [7, 8, 9, 10, 11, 12]
    await events.aclose()


async def test_event_trigger_without_a_state_store_keeps_the_watermark_in_memory(tmp_path):
    root = write_log(tmp_path / "t", 2)
    trigger = _event_trigger(root, None)
    events = trigger.run()
    pending = asyncio.ensure_future(events.__anext__())
    while trigger._memory_watermark is None:  # the baseline, read at start
        await asyncio.sleep(0.01)
    assert trigger._memory_watermark == 1
    write_commit(root, 2)
    assert (await pending).payload["version"] == 2
    assert trigger._memory_watermark == 2
    await events.aclose()
