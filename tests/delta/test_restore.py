"""RESTORE in the core, on every backend: the old version's files come back in
one new commit, time travel keeps working across it, and a version whose files
were vacuumed is refused by name with nothing committed. delta-rs reads every
version back."""

from __future__ import annotations

import dataclasses
import json
import time

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import DataFilesMissingError, InvalidInputError, VersionNotFoundError
from airflow_delta_provider.delta.partitions import relative_to_root
from airflow_delta_provider.delta.restore import plan_restore, restore_table
from airflow_delta_provider.delta.table import DeltaTable

from .test_on_every_backend import SCHEMA, append, ids_of, rows


@pytest.fixture
def backend(storage_backend, monkeypatch):
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend


def _history(new_table, data_file, uri: str) -> DeltaTable:
    """v0 [1, 2] / v1 +[3] / v2 [1, 2] removed / v3 +[4]."""
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1, 2])])
    table = DeltaTable(uri)
    append(table, rows(data_file, uri, [3], "b"))
    snapshot = table.snapshot()
    first = next(f for f in snapshot.files if f.partition_values == {"p": "a"})
    txn = table.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snapshot)
    txn.add(first.remove(int(time.time() * 1000)))
    txn.commit(metrics={"numDeletedRows": 2})
    append(table, rows(data_file, uri, [4]))
    return table


def test_restore_brings_an_old_version_back_and_keeps_time_travel(
    backend, new_table, data_file, snapshot_rows, deltalake_rows
):
    uri = backend.uri("t")
    table = _history(new_table, data_file, uri)

    result, plan = restore_table(table, version=1, token="dag/restore/run/-1")

    assert result.version == 4
    expected = {0: [1, 2], 1: [1, 2, 3], 2: [3], 3: [3, 4], 4: [1, 2, 3]}
    for version, ids in expected.items():
        assert ids_of(snapshot_rows(table.snapshot(version=version))) == ids, version
        assert ids_of(deltalake_rows(uri, version, backend.storage_options)) == ids, version
    info = table.history(limit=1)[0]
    assert info["operation"] == "RESTORE"
    assert info["operationParameters"] == {"version": 1}  # delta-spark leaves out the timestamp then
    assert info["operationMetrics"] == {
        "numRestoredFiles": "1",
        "restoredFilesSize": str(plan.restored[0].size),
        "numRemovedFiles": "1",
        "removedFilesSize": str(plan.removed[0].size),
        "numOfFilesAfterRestore": "2",
        "tableSizeAfterRestore": str(table.snapshot(version=1).size_in_bytes),
    }
    assert table.find_commit("dag/restore/run/-1")[0] == 4
    # The re-added file is the old one, as data: readers of the change see it come back.
    (readd,) = [a for a in _commit(table, 4) if "add" in a]
    assert readd["add"]["dataChange"] is True
    assert readd["add"]["path"] == plan.restored[0].path


def _commit(table: DeltaTable, version: int) -> list[dict]:
    raw = table.storage.get(f"_delta_log/{version:020d}.json")
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def test_restore_by_timestamp(backend, new_table, data_file, snapshot_rows):
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1])])
    table = DeltaTable(uri)
    time.sleep(1.1)  # object stores stamp files to the second
    between = int(time.time() * 1000)
    time.sleep(1.1)
    append(table, rows(data_file, uri, [2]))

    result, plan = restore_table(table, timestamp=between)

    assert (result.version, plan.target.version) == (2, 0)
    assert ids_of(snapshot_rows(table.snapshot())) == [1]
    assert table.history(limit=1)[0]["operationParameters"]["timestamp"] == str(between)


def test_a_vacuumed_version_is_refused_by_name_and_nothing_is_committed(backend, new_table, data_file):
    uri = backend.uri("t")
    table = _history(new_table, data_file, uri)
    gone = next(f for f in table.snapshot(version=0).files)
    table.storage.delete(relative_to_root(table.root, gone.path))  # what VACUUM does to a removed file
    before = table.latest_version()

    with pytest.raises(DataFilesMissingError, match="1 of its files no longer exist") as caught:
        restore_table(table, version=1)

    assert relative_to_root(table.root, gone.path) in str(caught.value)
    assert isinstance(caught.value, InvalidInputError)  # a retry cannot help
    assert table.latest_version() == before


def test_restore_refuses_what_it_cannot_do(tmp_path, new_table, data_file):
    uri = str(tmp_path / "t")
    table = _history(new_table, data_file, uri)
    with pytest.raises(InvalidInputError, match=r"version to restore \(3\) must be older than the latest version"):
        plan_restore(table, version=3)
    with pytest.raises(InvalidInputError, match="version or a timestamp"):
        plan_restore(table, version=1, timestamp="2020-01-01")
    with pytest.raises(InvalidInputError, match="version or a timestamp"):
        plan_restore(table)
    with pytest.raises(VersionNotFoundError):
        plan_restore(table, version=9)
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        plan_restore(table, timestamp="2000-01-01T00:00:00Z")
    assert table.latest_version() == 3


def test_restore_brings_back_the_old_schema_and_properties(tmp_path, new_table, data_file, snapshot_rows):
    uri = str(tmp_path / "t")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1])])
    table = DeltaTable(uri)
    old = table.snapshot()
    wider = json.loads(old.metadata.schema_string)
    wider["fields"].append({"name": "note", "type": "string", "nullable": True, "metadata": {}})
    txn = table.transaction("SET TBLPROPERTIES", snapshot=old)
    configuration = {**old.metadata.configuration, "delta.logRetentionDuration": "interval 2 days"}
    txn.update_metadata(dataclasses.replace(old.metadata, schema_string=json.dumps(wider), configuration=configuration))
    txn.commit()
    assert "note" in table.snapshot().metadata.schema_string

    restore_table(table, version=0)

    restored = table.snapshot()
    assert restored.metadata.schema_string == old.metadata.schema_string
    assert restored.metadata.configuration == old.metadata.configuration
    assert restored.protocol == old.protocol
    assert ids_of(snapshot_rows(restored)) == [1]
