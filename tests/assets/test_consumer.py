"""version_range and the consumer's progress, on real tables written by delta-rs.

The events are Airflow's own ``triggering_asset_events`` mapping
(``TriggeringAssetEventsAccessor``) built from the Execution API's event
model, as a task receives it. The asset state store behind
``processed_version``/``record_processed`` is exercised for real in
``tests/deployment``; here it is a dict with its ``get``/``set``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_delta_provider.assets import processed_version, record_processed, version_range
from airflow_delta_provider.assets.consumer import event_versions, progress_key
from airflow_delta_provider.delta.errors import VersionRangeConflictError

URI = "file:///data/orders"


class DictState:
    """The asset state store's get/set, in memory."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        assert value is not None
        self.values[key] = value


def _table(path: Path, versions: int) -> str:
    """A table with ``versions`` appends: versions 0 to versions - 1."""
    for i in range(versions):
        write_deltalake(str(path), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    return str(path)


def _event(extra: dict[str, Any], name: str = "orders", uri: str = URI) -> Any:
    from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult

    return AssetEventDagRunReferenceResult(
        asset={"name": name, "uri": uri, "extra": {}},
        extra=extra,
        source_task_id=None,
        source_dag_id=None,
        source_run_id=None,
        source_map_index=None,
        source_aliases=[],
        timestamp=datetime.now(timezone.utc),
    )


def _watcher(*versions: int) -> Any:
    """An event of DeltaTableEventTrigger covering ``versions``."""
    payload = {"versions": list(versions), "version": versions[-1], "first_version": versions[0], "table": "/t"}
    return _event({"from_trigger": True, "payload": payload})


def _triggering(*events: Any) -> Any:
    from airflow.sdk.execution_time.context import TriggeringAssetEventsAccessor

    return TriggeringAssetEventsAccessor.build(events)


def _orders() -> Any:
    from airflow.sdk import Asset

    return Asset(name="orders", uri=URI)


def test_a_first_run_starts_at_the_first_version_its_events_name(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 6)
    events = _triggering(_watcher(3, 4, 5))
    assert version_range(events, None, table_path=table, asset=_orders()) == {
        "table": table,
        "start_version": 3,
        "end_version": 5,
        "event_versions": [3, 4, 5],
    }


def test_a_run_processes_versions_whose_event_reached_no_run(tmp_path: Path) -> None:
    """Versions 2 and 3 were announced by an event that no run received; the
    run that gets the event of version 4 processes 2, 3 and 4."""
    table = _table(tmp_path / "t", 5)
    got = version_range(_triggering(_watcher(4)), 1, table_path=table, asset=_orders())
    assert got is not None
    assert (got["start_version"], got["end_version"], got["event_versions"]) == (2, 4, [4])


def test_the_range_ends_at_the_newest_version_in_the_log_not_at_the_events(tmp_path: Path) -> None:
    """A version committed after the event fired is processed now; the run that
    its own event schedules later then has nothing left to do."""
    table = _table(tmp_path / "t", 3)
    events = _triggering(_watcher(1))
    write_deltalake(table, pa.table({"id": pa.array([9], pa.int64())}), mode="append")  # version 3
    first = version_range(events, 0, table_path=table, asset=_orders())
    assert first is not None and (first["start_version"], first["end_version"]) == (1, 3)
    assert version_range(_triggering(_watcher(2, 3)), 3, table_path=table, asset=_orders()) is None


def test_a_run_with_no_event_still_reads_the_log(tmp_path: Path) -> None:
    """A manual run (or ``airflow dags test``): no events. Nothing processed
    yet starts at version 0, or at ``initial_version``."""
    table = _table(tmp_path / "t", 3)
    for no_events in (None, [], _triggering()):
        got = version_range(no_events, None, table_path=table, asset=_orders())
        assert got is not None and (got["start_version"], got["end_version"], got["event_versions"]) == (0, 2, [])
    got = version_range(None, None, table_path=table, initial_version=2)
    assert got is not None and (got["start_version"], got["end_version"]) == (2, 2)
    assert version_range(None, 2, table_path=table) is None


def test_events_of_the_writing_operators_and_of_other_assets(tmp_path: Path) -> None:
    """A writer's event names its commit in ``extra["version"]``; with no
    ``asset`` every event of the mapping counts, with one only that asset's."""
    table = _table(tmp_path / "t", 4)
    writer = _event({"version": 2, "operation": "WRITE", "table": table, "metrics": {}})
    other = _event({"version": 7}, name="customers", uri="file:///data/customers")
    events = _triggering(writer, other, _watcher(3))
    assert event_versions(events[_orders()]) == [2, 3]
    assert version_range(events, None, table_path=table, asset=_orders())["start_version"] == 2  # type: ignore[index]
    assert version_range(events, None, table_path=table)["event_versions"] == [2, 3, 7]  # type: ignore[index]
    assert event_versions([{"extra": {"payload": {"version": 5}}}, {"extra": None}, object()]) == [5]


def test_no_table_yet_is_nothing_to_process(tmp_path: Path) -> None:
    assert version_range(None, None, table_path=str(tmp_path / "missing")) is None


def test_recorded_progress_moves_forward_once_per_range(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 3)
    state = DictState()
    assert processed_version(state, "c") is None
    first = version_range(None, processed_version(state, "c"), table_path=table)
    assert record_processed(state, "c", first) == 2
    assert state.values == {progress_key("c"): 2}
    assert record_processed(state, "c", first) == 2  # a retried task: the same range again
    assert record_processed(state, "c", None) == 2  # nothing new
    assert processed_version(state, "other consumer") is None  # one key per consumer

    DeltaTable(table).delete("id = 0")  # version 3
    second = version_range(None, processed_version(state, "c"), table_path=table)
    assert second is not None and (second["start_version"], second["end_version"]) == (3, 3)
    assert record_processed(state, "c", second) == 3


def test_two_runs_that_processed_the_same_versions_fail_to_record(tmp_path: Path) -> None:
    """Without max_active_runs=1, two runs read the same progress and process
    the same range: the second one to record it is refused."""
    table = _table(tmp_path / "t", 2)
    state = DictState()
    record_processed(state, "c", version_range(None, None, table_path=table))
    write_deltalake(table, pa.table({"id": pa.array([5], pa.int64())}), mode="append")  # version 2
    write_deltalake(table, pa.table({"id": pa.array([6], pa.int64())}), mode="append")  # version 3
    run_a = version_range(None, processed_version(state, "c"), table_path=table)
    run_b = version_range(None, processed_version(state, "c"), table_path=table)
    assert run_a is not None and run_b is not None
    run_b = {**run_b, "end_version": 2}  # B read the log before version 3 landed
    record_processed(state, "c", run_a)
    with pytest.raises(VersionRangeConflictError, match="max_active_runs=1"):
        record_processed(state, "c", run_b)  # type: ignore[arg-type]
    assert processed_version(state, "c") == 3
