"""DeltaTableVersionTrigger, DeltaTableEventTrigger and the VersionProbe under them."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from airflow.triggers.base import BaseEventTrigger

from airflow_delta_provider.delta.errors import TableNotFoundError
from airflow_delta_provider.triggers.delta_table import (
    WATERMARK_KEY,
    DeltaPartitionTrigger,
    DeltaTableEventTrigger,
    DeltaTableVersionTrigger,
    _TableTrigger,
)
from tests.delta_logs import BASE_TS, delete_commits, write_commit, write_log
from tests.delta_rs_history import EXPECTED


def _rebuild(trigger):
    """Re-create a trigger the way the triggerer does: import the classpath, pass the kwargs."""
    import importlib

    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)


def assert_kwargs(kwargs: dict, expected: dict) -> None:
    """Equal, and in the same order: an event trigger is known by a hash of its
    kwargs as written, so a new order would orphan the watchers already stored."""
    assert list(kwargs.items()) == list(expected.items())


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


# --- what the three triggers share --------------------------------------------------------

TRIGGERS = (DeltaTableVersionTrigger, DeltaTableEventTrigger, DeltaPartitionTrigger)


def _constructor_arguments(cls) -> list[str]:
    """The named arguments of ``cls`` and of the bases it passes ``**kwargs`` to."""
    names = []
    for klass in cls.__mro__:
        if "__init__" in vars(klass) and issubclass(klass, _TableTrigger):
            names += [
                p.name
                for p in inspect.signature(klass.__init__).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in names
            ]
    return names


@pytest.mark.parametrize("cls", TRIGGERS, ids=lambda cls: cls.__name__)
def test_serialize_writes_every_constructor_argument_once(cls):
    assert sorted(cls.serialized_fields) == sorted(_constructor_arguments(cls))


def test_partition_trigger_serialize_round_trip(tmp_path):
    trigger = DeltaPartitionTrigger(str(tmp_path), {"ds": "d1"}, 5, poll_interval=2.0, storage_conn_id="s3")
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_delta_provider.triggers.delta_table.DeltaPartitionTrigger"
    assert_kwargs(kwargs, {
        "table_path": str(tmp_path), "partition": {"ds": "d1"}, "min_records": 5, "poll_interval": 2.0,
        "wait_for_creation": False, "storage_conn_id": "s3",
    })  # fmt: skip
    assert _rebuild(trigger).serialize() == (classpath, kwargs)


async def test_a_secret_never_reaches_a_serialized_trigger(tmp_path, monkeypatch):
    """The connection is read when the trigger runs; only its id is serialized."""
    secret = "s3cr3t-never-serialized"
    conn = {"conn_type": "aws", "login": "AKIA1", "password": secret}
    monkeypatch.setenv("AIRFLOW_CONN_TABLE_STORE", json.dumps(conn))
    root = write_log(tmp_path / "t", 3, partition_value="d0")
    common = {"table_path": str(root), "poll_interval": 0.01, "storage_conn_id": "table_store"}
    triggers = [
        DeltaTableVersionTrigger(after_version=-1, **common),
        _event_trigger(root, FakeAssetStateStore(), after_version=-1, storage_conn_id="table_store"),
        DeltaPartitionTrigger(partition={"ds": "d0"}, **common),
    ]
    for trigger in triggers:
        events = trigger.run()
        payload = (await asyncio.wait_for(events.__anext__(), 30)).payload  # the connection was resolved
        await events.aclose()
        assert payload.get("status", "success") == "success" and payload["version"] == 2
        serialized = json.dumps(trigger.serialize())
        assert secret not in serialized and "table_store" in serialized


# --- DeltaTableVersionTrigger -------------------------------------------------------


def test_version_trigger_serialize_round_trip(tmp_path):
    trigger = DeltaTableVersionTrigger(
        table_path=str(tmp_path), after_version=7, poll_interval=2.5, wait_for_creation=True, storage_conn_id="s3"
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_delta_provider.triggers.delta_table.DeltaTableVersionTrigger"
    assert_kwargs(kwargs, {
        "table_path": str(tmp_path),
        "after_version": 7,
        "poll_interval": 2.5,
        "wait_for_creation": True,
        "storage_conn_id": "s3",
        "data_changes_only": True,
        "operations": None,
        "partition": None,
        "baseline_version": 7,
        "skipped_versions": [],
    })  # fmt: skip
    assert _rebuild(trigger).serialize() == (classpath, kwargs)


async def test_version_trigger_fires_on_an_existing_newer_version(tmp_path):
    root = write_log(tmp_path / "t", 6)
    trigger = DeltaTableVersionTrigger(table_path=str(root), after_version=2, poll_interval=0.01)
    event = await trigger.run().__anext__()
    assert event.payload == {
        "status": "success",
        "version": 5,
        "versions": [3, 4, 5],
        "skipped_versions": [],
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
    assert_kwargs(kwargs, {
        "table_path": str(tmp_path),
        "poll_interval": 3.0,
        "after_version": 4,
        "storage_conn_id": None,
        "data_changes_only": True,
        "operations": None,
        "partition": None,
    })  # fmt: skip
    assert _rebuild(trigger).serialize() == (classpath, kwargs)
    # The triggerer identifies watchers by this hash: it must be stable across a rebuild.
    assert BaseEventTrigger.hash(classpath, kwargs) == BaseEventTrigger.hash(*_rebuild(trigger).serialize())


def _event_trigger(root, store, **kwargs):
    trigger = DeltaTableEventTrigger(table_path=str(root), poll_interval=0.01, **kwargs)
    trigger.asset_state_store = store  # what the triggerer injects before run()
    return trigger


async def _take(events, n):
    return [(await events.__anext__()).payload for _ in range(n)]


async def test_event_trigger_fires_one_event_per_poll(tmp_path):
    root = write_log(tmp_path / "t", 10)
    store = FakeAssetStateStore()
    events = _event_trigger(root, store).run()
    first = asyncio.ensure_future(events.__anext__())
    await store.written.wait()  # the baseline is stored before the first poll
    assert store.values == {WATERMARK_KEY: 9}
    await asyncio.sleep(0.1)
    assert not first.done()  # existing versions are not new
    write_commit(root, 10)
    assert (await first).payload == {
        "version": 10,
        "versions": [10],
        "first_version": 10,
        "operations": ["WRITE"],
        "timestamps": [BASE_TS + 10_000],
        "operation": "WRITE",
        "timestamp": BASE_TS + 10_000,
        "table": str(root),
    }
    await events.aclose()

    # Three commits while the triggerer is down: one event covers them all.
    for version, operation in ((11, "WRITE"), (12, "MERGE"), (13, "DELETE")):
        write_commit(root, version, operation=operation)
    events = _event_trigger(root, store).run()
    burst = (await events.__anext__()).payload
    assert (burst["first_version"], burst["versions"], burst["version"]) == (11, [11, 12, 13], 13)
    assert burst["operations"] == ["WRITE", "MERGE", "DELETE"]
    assert burst["timestamps"] == [BASE_TS + v * 1000 for v in (11, 12, 13)]
    assert store.values[WATERMARK_KEY] == 13

    # Nothing more until the next commit, and then exactly that version.
    nxt = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.1)
    assert not nxt.done()
    write_commit(root, 14, operation="DELETE")
    assert (await nxt).payload["versions"] == [14]
    await events.aclose()
    assert [v for _, v in store.writes] == [9, 10, 13, 14]


def _as_airflow_task_commit(root, version: int) -> None:
    """Tag commit ``version`` with an operation token, as a writing Airflow task's commit is."""
    from airflow_delta_provider.delta.actions.model import TOKEN_TAG
    from tests.delta_logs import commit_path

    path = commit_path(root, version)
    actions = [json.loads(line) for line in path.read_text().splitlines()]
    for action in actions:
        if "commitInfo" in action:
            action["commitInfo"]["tags"] = {TOKEN_TAG: f"writer/load/run/{version}/-1"}
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))


async def test_event_trigger_leaves_out_the_versions_airflow_tasks_committed(tmp_path):
    """A writing task emits its own commit's event; the watcher on the same table
    emits the others, so the asset carries one event per version (issue 39)."""
    root = write_log(tmp_path / "t", 3)
    store = FakeAssetStateStore()
    events = _event_trigger(root, store).run()
    nxt = asyncio.ensure_future(events.__anext__())
    await store.written.wait()
    for version in (3, 4, 5):
        write_commit(root, version)
    _as_airflow_task_commit(root, 4)
    _as_airflow_task_commit(root, 5)
    payload = (await nxt).payload
    assert (payload["versions"], payload["version"], payload["first_version"]) == ([3], 3, 3)
    nxt = asyncio.ensure_future(events.__anext__())
    write_commit(root, 6)
    _as_airflow_task_commit(root, 6)
    await asyncio.sleep(0.1)
    assert not nxt.done()  # only a task's commit: no event from the watcher
    write_commit(root, 7)
    assert (await nxt).payload["versions"] == [7]
    await events.aclose()
    assert store.values[WATERMARK_KEY] == 7


async def test_event_trigger_resumes_from_the_stored_watermark(tmp_path):
    root = write_log(tmp_path / "t", 5)
    store = FakeAssetStateStore()
    store.values[WATERMARK_KEY] = 2  # a previous triggerer fired up to version 2
    events = _event_trigger(root, store).run()
    assert (await events.__anext__()).payload["versions"] == [3, 4]
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
    assert (await events.__anext__()).payload["versions"] == [0, 1]
    await events.aclose()


async def test_event_trigger_skips_versions_lost_to_log_cleanup(tmp_path):
    root = write_log(tmp_path / "t", 13)  # _last_checkpoint -> 10
    delete_commits(root, 7)
    store = FakeAssetStateStore()
    store.values[WATERMARK_KEY] = 2
    events = _event_trigger(root, store).run()
    assert (await events.__anext__()).payload["versions"] == [7, 8, 9, 10, 11, 12]
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


# --- filters -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    pytest.importorskip("deltalake")
    from tests.delta_rs_history import write_mixed_history

    return write_mixed_history(tmp_path_factory.mktemp("mixed") / "t")


async def _first_payload(events, seconds: float = 0.5) -> dict | None:
    try:
        return (await asyncio.wait_for(events.__anext__(), seconds)).payload
    except asyncio.TimeoutError:
        return None
    finally:
        await events.aclose()


@pytest.mark.parametrize(("filters", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
async def test_event_trigger_filters_a_burst_into_one_event(history, filters, expected):
    store = FakeAssetStateStore()
    payload = await _first_payload(_event_trigger(history, store, after_version=-1, **filters).run())
    assert store.values[WATERMARK_KEY] == 7  # every version was read, passing or not
    if not expected:
        assert payload is None
        return
    operations = {h["version"]: h["operation"] for h in deltalake_history(history)}
    assert payload["versions"] == expected
    assert (payload["first_version"], payload["version"]) == (expected[0], expected[-1])
    assert payload["operations"] == [operations[v] for v in expected]


async def test_event_trigger_after_a_restart_reports_only_the_data_change(tmp_path):
    pytest.importorskip("deltalake")
    from deltalake import DeltaTable

    from tests.delta_rs_history import DAY_3, append, write_mixed_history

    uri = write_mixed_history(tmp_path / "t")
    store = FakeAssetStateStore()
    store.values[WATERMARK_KEY] = 7
    # While the triggerer is down: an OPTIMIZE, then an append.
    append(uri, DAY_3, 1)  # 8
    append(uri, DAY_3, 1)  # 9
    DeltaTable(uri).optimize.compact()  # 10
    append(uri, DAY_3, 1)  # 11
    payload = await _first_payload(_event_trigger(uri, store, operations=["WRITE", "MERGE"]).run())
    assert payload["versions"] == [8, 9, 11] and payload["operations"] == ["WRITE", "WRITE", "WRITE"]
    assert store.values[WATERMARK_KEY] == 11


def deltalake_history(uri: str) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(uri).history()
