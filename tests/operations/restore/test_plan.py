"""RESTORE in the core, on every backend: the old version's files come back in
one new commit, time travel keeps working across it, and a version whose files
were vacuumed is refused by name with nothing committed. delta-rs reads every
version back."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    DataFilesMissingError,
    InvalidInputError,
    VersionNotFoundError,
)
from airflow_delta_provider.delta.partitions import relative_to_root
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.restore.plan import plan_restore, restore_table
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from tests.delta.test_on_every_backend import SCHEMA, append, history_with_a_delete, ids_of, rows


@pytest.fixture
def backend(storage_backend, monkeypatch):
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend


def _history(new_table, data_file, uri: str) -> DeltaTable:
    """v0 [1, 2] / v1 +[3] / v2 [1, 2] removed / v3 +[4]."""
    table = history_with_a_delete(new_table, data_file, uri)
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
    assert info["operationParameters"] == {"version": 1, "timestamp": None}  # as delta-spark records it
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
    assert table.history(limit=1)[0]["operationParameters"] == {"version": None, "timestamp": str(between)}


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
    with pytest.raises(InvalidInputError, match="exactly one of version, timestamp"):
        RestoreSpec(table_path=table.uri, version=1, timestamp="2020-01-01")
    with pytest.raises(InvalidInputError, match="exactly one of version, timestamp"):
        RestoreSpec(table_path=table.uri)
    with pytest.raises(InvalidInputError, match="versions start at 0"):
        RestoreSpec(table_path=table.uri, version=-1)
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


def _set_properties(table: DeltaTable, **changes: str | None) -> None:
    snapshot = table.snapshot()
    configuration = {k: v for k, v in {**snapshot.metadata.configuration, **changes}.items() if v is not None}
    txn = table.transaction("SET TBLPROPERTIES", snapshot=snapshot)
    txn.update_metadata(dataclasses.replace(snapshot.metadata, configuration=configuration))
    txn.commit()


def test_append_only_is_judged_by_the_table_as_it_is_now(tmp_path, new_table, data_file, snapshot_rows):
    """As delta-spark's assertRemovable: an append-only table refuses a RESTORE
    that removes data (even to a version from before the property), and a table
    whose property was turned off may go back to a version that had it."""
    uri = str(tmp_path / "t")
    table = _history(new_table, data_file, uri)  # v3: [3, 4]
    _set_properties(table, **{"delta.appendOnly": "true"})  # v4
    with pytest.raises(AppendOnlyViolationError, match="append-only"):
        restore_table(table, version=1)
    assert table.latest_version() == 4

    _set_properties(table, **{"delta.appendOnly": "false"})  # v5
    result, _ = restore_table(table, version=4)  # back to append-only, removing nothing
    assert result.version == 6 and table.snapshot().metadata.configuration["delta.appendOnly"] == "true"
    _set_properties(table, **{"delta.appendOnly": None})  # v7
    restore_table(table, version=1)  # removes [4]: allowed, the table is not append-only now
    assert ids_of(snapshot_rows(table.snapshot())) == [1, 2, 3]


def test_the_protocol_is_never_downgraded_nor_loses_a_feature_of_the_old_version(tmp_path, new_table, data_file):
    uri = str(tmp_path / "t")
    new_table(uri, SCHEMA, ["p"], {"delta.enableDeletionVectors": "true"}, adds=[rows(data_file, uri, [1])])  # v0
    table = DeltaTable(uri)
    with_vectors = table.snapshot().protocol
    assert "deletionVectors" in with_vectors.writer_features
    _set_properties(table, **{"delta.enableDeletionVectors": None})  # v1: the feature stays listed
    txn = table.transaction("DROP FEATURE", snapshot=table.snapshot())  # v2: as delta-spark's DROP FEATURE leaves it
    txn.update_protocol(Protocol(1, 2))
    txn.commit()
    append(table, rows(data_file, uri, [2]))  # v3

    restore_table(table, version=1)

    restored = table.snapshot().protocol
    assert (restored.min_reader_version, restored.min_writer_version) == (3, 7)
    assert "deletionVectors" in restored.reader_features and "deletionVectors" in restored.writer_features
    restore_table(table, version=3)  # and back: v1's features are not dropped again
    assert table.snapshot().protocol == restored


def test_stats_a_checkpoint_held_only_as_a_struct_come_back_as_json(tmp_path, new_table, data_file):
    uri = str(tmp_path / "t")
    configuration = {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"}
    new_table(uri, SCHEMA, ["p"], configuration, adds=[rows(data_file, uri, [1, 2, 3])])
    table = DeltaTable(uri)
    append(table, rows(data_file, uri, [4]))
    write_checkpoint(table, table.snapshot())
    old = next(f for f in table.snapshot(version=1).files if f.num_records == 3)
    txn = table.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=table.snapshot())
    txn.add(old.remove(int(time.time() * 1000)))
    txn.commit()

    restore_table(table, version=1)

    (readd,) = [a["add"] for a in _commit(table, 3) if "add" in a]
    assert json.loads(readd["stats"])["numRecords"] == 3


def test_a_concurrent_append_makes_restore_fail_rather_than_lose_it(
    tmp_path, new_table, data_file, snapshot_rows, monkeypatch
):
    from airflow_delta_provider.operations.restore import plan as restore_module

    uri = str(tmp_path / "t")
    table = _history(new_table, data_file, uri)
    checking = restore_module.missing_files

    def append_meanwhile(target, files):  # another writer commits between the plan and the commit
        append(DeltaTable(uri), rows(data_file, uri, [9]))
        return checking(target, files)

    monkeypatch.setattr(restore_module, "missing_files", append_meanwhile)
    with pytest.raises(ConcurrentAppendError):
        restore_table(table, version=1)
    assert table.latest_version() == 4
    assert ids_of(snapshot_rows(table.snapshot())) == [3, 4, 9]
