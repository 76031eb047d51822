"""In-commit timestamps (PROTOCOL.md "In-Commit Timestamps"): the
``inCommitTimestamp`` feature, written by the transaction and read back by
time travel and history."""

from __future__ import annotations

import json
import os
import threading
import time
from itertools import pairwise

import pytest

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta_logs import local_log_path

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
ICT_ON = {table_properties.ENABLE_IN_COMMIT_TIMESTAMPS: "true"}


def create(root, configuration: dict[str, str] | None = None) -> DeltaTable:
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {}, None)
    txn.update_metadata(Metadata.new(SCHEMA, (), dict(configuration or {}), created_time=int(time.time() * 1000)))
    txn.add(AddFile("f0.parquet", {}, 1, 1))
    txn.commit()
    return table


def append(table: DeltaTable, name: str) -> int:
    txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    txn.add(AddFile(name, {}, 1, 1))
    return txn.commit().version


def actions(table: DeltaTable, version: int) -> list[dict]:
    with open(local_log_path(table, f"{version:020d}.json")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def ict(table: DeltaTable, version: int) -> int:
    first = actions(table, version)[0]
    assert "commitInfo" in first, "commitInfo must be the first action"
    return first["commitInfo"]["inCommitTimestamp"]


def test_enabling_them_on_an_existing_table_upgrades_the_protocol_and_records_when(tmp_path):
    table = create(tmp_path)
    append(table, "f1.parquet")
    md = table.snapshot().metadata
    txn = table.transaction("SET TBLPROPERTIES", {}, table.snapshot())
    txn.update_metadata(Metadata.from_json({**md.to_json(), "configuration": {**md.configuration, **ICT_ON}}))
    version = txn.commit().version
    snap = table.snapshot()
    assert version == 2
    assert snap.protocol.min_reader_version == 1 and snap.protocol.min_writer_version == 7
    assert set(snap.protocol.writer_features) == {"appendOnly", "invariants", "inCommitTimestamp"}
    assert snap.metadata.configuration[table_properties.ICT_ENABLEMENT_VERSION] == "2"
    assert snap.metadata.configuration[table_properties.ICT_ENABLEMENT_TIMESTAMP] == str(ict(table, 2))
    assert "inCommitTimestamp" not in actions(table, 1)[0].get("commitInfo", {})
    assert ict(table, append(table, "f2.parquet")) > ict(table, 2)
    # delta-rs reads the table (a writer feature asks nothing of a reader).
    from deltalake import DeltaTable as RsTable

    assert RsTable(str(tmp_path)).version() == 3


def test_timestamps_grow_even_when_the_clock_goes_back(tmp_path, monkeypatch):
    table = create(tmp_path, ICT_ON)
    assert table_properties.ICT_ENABLEMENT_VERSION not in table.snapshot().metadata.configuration  # on since creation
    first = ict(table, 0)
    monkeypatch.setattr(time, "time", lambda: (first - 60_000) / 1000)  # a minute in the past
    v1, v2 = append(table, "f1.parquet"), append(table, "f2.parquet")
    assert (ict(table, v1), ict(table, v2)) == (first + 1, first + 2)


def test_four_concurrent_writers_get_strictly_increasing_timestamps(tmp_path):
    table = create(tmp_path, ICT_ON)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(5):
                append(DeltaTable(str(tmp_path)), f"w{n}-{i}.parquet")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    latest = table.snapshot().version
    assert latest == 20
    stamps = [ict(table, v) for v in range(latest + 1)]
    assert all(a < b for a, b in pairwise(stamps))


def test_time_travel_and_history_use_them_not_file_times(tmp_path):
    table = create(tmp_path, ICT_ON)
    for i in range(1, 4):
        append(table, f"f{i}.parquet")
    stamps = {v: ict(table, v) for v in range(4)}
    # File times lie (a copy, a store that rewrites them): all the same, long ago.
    for f in table.log_store.list_from(0):
        os.utime(local_log_path(table, f.name), (1_000_000, 1_000_000))
    assert table.version_at(stamps[2])[0] == 2
    assert table.version_at(stamps[2] + 0)[1] == stamps[2]
    assert table.snapshot(timestamp=stamps[3] + 5).version == 3
    assert [(h["version"], h["timestamp"]) for h in table.history()] == [(v, stamps[v]) for v in (3, 2, 1, 0)]
    # A version's own time is its in-commit timestamp too: the snapshot's, DESCRIBE DETAIL's lastModified.
    from airflow_delta_provider.delta.table_info import detail

    assert [table.snapshot(v).timestamp for v in range(4)] == [stamps[v] for v in range(4)]
    assert detail(table.snapshot())["lastModified"] == stamps[3]


def test_turning_them_off_drops_the_enablement_properties(tmp_path):
    table = create(tmp_path)
    md = table.snapshot().metadata
    for value in ("true", "false"):
        md = table.snapshot().metadata
        txn = table.transaction("SET TBLPROPERTIES", {}, table.snapshot())
        configuration = {**md.configuration, table_properties.ENABLE_IN_COMMIT_TIMESTAMPS: value}
        txn.update_metadata(Metadata.from_json({**md.to_json(), "configuration": configuration}))
        txn.commit()
    snap = table.snapshot()
    assert table_properties.ICT_ENABLEMENT_VERSION not in snap.metadata.configuration
    assert "inCommitTimestamp" not in actions(table, snap.version)[0]["commitInfo"]


def test_the_property_is_one_a_user_may_set(tmp_path):
    """APPEND's and ALTER's table properties go through this check."""
    from airflow_delta_provider.delta.errors import InvalidInputError

    md = create(tmp_path).snapshot().metadata
    assert table_properties.in_commit_timestamps_enabled(table_properties.with_properties(md, ICT_ON))
    with pytest.raises(InvalidInputError, match="must be true or false"):
        table_properties.with_properties(md, {table_properties.ENABLE_IN_COMMIT_TIMESTAMPS: "yes"})


def _set(table: DeltaTable, value: str) -> None:
    md = table.snapshot().metadata
    txn = table.transaction("SET TBLPROPERTIES", {}, table.snapshot())
    txn.update_metadata(
        Metadata.from_json({**md.to_json(), "configuration": {**md.configuration, table_properties.ENABLE_IN_COMMIT_TIMESTAMPS: value}})
    )
    txn.commit()


def test_a_restore_keeps_the_enablement_this_table_recorded(tmp_path):
    """Restoring a version whose metadata names an older enablement must not
    date commits that carry no in-commit timestamp by one."""
    from airflow_delta_provider.delta.operations.restore import restore_table

    table = create(tmp_path)  # v0
    _set(table, "true")  # v1: on since 1
    append(table, "f1.parquet")  # v2
    _set(table, "false")  # v3
    _set(table, "true")  # v4: on since 4
    append(table, "f2.parquet")  # v5
    restore_table(table, version=2)  # v6, v2's metadata says "since 1"
    assert table.snapshot().metadata.configuration[table_properties.ICT_ENABLEMENT_VERSION] == "4"
    times = [ts for _, ts in table.commit_timestamps()]
    assert all(a < b for a, b in pairwise(times))


# --- the feature's functions ------------------------------------------------------------


def test_the_enabling_commit_records_its_version_and_timestamp_and_later_ones_keep_them():
    from airflow_delta_provider.delta.actions.model import Metadata
    from airflow_delta_provider.delta.table_features.in_commit_timestamps import ENABLEMENT_KEYS, record_enablement

    schema = '{"type":"struct","fields":[]}'
    off = Metadata.new(schema, (), {}, created_time=0)
    on = Metadata.new(schema, (), {"delta.enableInCommitTimestamps": "true"}, created_time=0)
    enabled = record_enablement(on, off, 4, 1_000)
    assert [enabled.configuration[k] for k in ENABLEMENT_KEYS] == ["4", "1000"]
    assert record_enablement(enabled, enabled, 5, 2_000).configuration == enabled.configuration
    assert not set(ENABLEMENT_KEYS) & set(record_enablement(enabled, enabled, 6, None).configuration)
    assert record_enablement(on, None, 0, 5) is on  # a new table records nothing
