"""The core of the change data feed: which files hold a range's changes, and
the errors for ranges that cannot be read. No Spark, no data files: the log
alone decides (tests/spark/read/test_table_changes.py reads the rows)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile, Metadata, Protocol
from airflow_delta_provider.delta.errors import ChangeDataUnavailableError, InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_changes import SUMMARY_FILE, changes_between, read_summary
from airflow_delta_provider.delta.table_features.change_data_feed import DELETE, INSERT
from airflow_delta_provider.delta.table_features.features import listed_features

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
CDF = {"delta.enableChangeDataFeed": "true"}


def add(name: str, data_change: bool = True) -> AddFile:
    return AddFile(name, {}, 10, 0, data_change=data_change, stats='{"numRecords":1}')


def commit(table: DeltaTable, operation: str, *actions, metadata: Metadata | None = None) -> int:
    snapshot = table.snapshot() if table.exists() else None
    txn = table.transaction(operation, {}, snapshot)
    if metadata is not None:
        txn.update_metadata(metadata)
    txn.add_all(actions)
    return txn.commit().version


@pytest.fixture
def table(tmp_path) -> DeltaTable:
    """Version 0: created with the feed on and one file; 1: an UPDATE with
    change data; 2: a whole-file DELETE; 3: an OPTIMIZE (no data change)."""
    t = DeltaTable(tmp_path)
    commit(t, "CREATE TABLE", add("a"), metadata=Metadata.new(SCHEMA, (), CDF, created_time=0))
    cdc = AddCDCFile("_change_data/cdc-1.parquet", {}, 5)
    commit(t, "UPDATE", add("b"), add("a").remove(1), cdc)
    commit(t, "DELETE", add("b").remove(2))
    commit(t, "OPTIMIZE", add("c", data_change=False))
    return t


def test_enabling_the_feed_asks_for_writer_4_as_delta_spark_does(table):
    protocol = table.snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
    assert "changeDataFeed" in listed_features(protocol)[1]


def test_each_commit_gives_its_cdc_files_or_else_its_data_changing_adds_and_removes(table):
    changes = changes_between(table, 0)
    got = [(f.version, f.change_type, f.file.path) for f in changes.files]
    assert got == [
        (0, INSERT, "a"),
        (1, None, "_change_data/cdc-1.parquet"),  # the commit's adds and removes are not changes
        (2, DELETE, "b"),
    ]  # version 3 changed no data
    assert changes.file_counts() == {"insert": 1, "cdc": 1, "delete": 1}
    assert (changes.start, changes.end, changes.snapshot.version) == (0, 3, 3)
    stamps = dict(table.commit_timestamps())
    assert [f.timestamp_ms for f in changes.files] == [stamps[0], stamps[1], stamps[2]]


def test_a_removed_file_is_read_as_it_was(table):
    (removed,) = [f for f in changes_between(table, 2, 2).files]
    assert removed.file.partition_values == {} and removed.file.stats == '{"numRecords":1}'


def test_cdc_actions_round_trip_and_need_the_feed(tmp_path):
    line = {"path": "_change_data/x.parquet", "partitionValues": {"p": "1"}, "size": 3, "dataChange": False}
    assert AddCDCFile.from_json(line).to_json() == line
    plain = DeltaTable(tmp_path)
    commit(plain, "CREATE TABLE", metadata=Metadata.new(SCHEMA, (), {}, created_time=0))
    with pytest.raises(InvalidInputError, match="enableChangeDataFeed is not true"):
        commit(plain, "UPDATE", AddCDCFile("_change_data/x.parquet", {}, 3))
    assert plain.latest_version() == 0


@pytest.mark.parametrize(
    "start, end, error, message",
    [
        (4, None, ChangeDataUnavailableError, "start version 4 is after the latest version 3"),
        (1, 7, ChangeDataUnavailableError, "end version 7 is after the latest version 3"),
        (2, 1, InvalidInputError, "end version 1 is before the start version 2"),
        (-1, None, InvalidInputError, "non-negative"),
        ("1", None, InvalidInputError, "non-negative integer"),
    ],
)
def test_ranges_outside_the_log_are_refused(table, start, end, error, message):
    with pytest.raises(error, match=message):
        changes_between(table, start, end)


def test_versions_log_cleanup_removed_are_named(table, tmp_path):
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()
    (tmp_path / "_delta_log" / f"{1:020d}.json").unlink()
    with pytest.raises(
        ChangeDataUnavailableError, match=r"version 1 .* no longer in the log \(the earliest commit kept is 2"
    ):
        changes_between(table, 1)


def test_versions_before_the_feed_was_on_or_after_it_was_off_are_refused(tmp_path):
    t = DeltaTable(tmp_path)
    commit(t, "CREATE TABLE", add("a"), metadata=Metadata.new(SCHEMA, (), {}, created_time=0))  # 0: off
    md = t.snapshot().metadata
    commit(t, "SET TBLPROPERTIES", metadata=replace(md, configuration=CDF))  # 1: on
    commit(t, "WRITE", add("b"))  # 2
    commit(t, "UNSET TBLPROPERTIES", metadata=replace(md, configuration={}))  # 3: off
    commit(t, "WRITE", add("c"))  # 4
    with pytest.raises(ChangeDataUnavailableError, match="not recorded for version 0"):
        changes_between(t, 0, 2)
    assert [f.file.path for f in changes_between(t, 1, 2).files] == ["b"]
    with pytest.raises(ChangeDataUnavailableError, match="not recorded for version 3"):
        changes_between(t, 1)


def test_the_summary_left_in_an_output_folder_is_read_back(tmp_path):
    assert read_summary(str(tmp_path)) is None
    (tmp_path / SUMMARY_FILE).write_text(json.dumps({"version": 3, "metrics": {"changes": {"insert": 1}}}))
    assert read_summary(str(tmp_path))["metrics"]["changes"] == {"insert": 1}


def test_protocol_of_a_legacy_writer_3_table_goes_to_4():
    from airflow_delta_provider.delta.table_features.gate import protocol_for

    md = Metadata.new(SCHEMA, (), {**CDF, "delta.constraints.c": "id > 0"}, created_time=0)
    assert protocol_for(Protocol(1, 3), md) == Protocol(1, 4)


def _vector(*rows: int):
    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector

    return inline_vector(BitMap64(rows))


def _hidden(snapshot_or_table, change) -> list[int]:
    from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader

    return sorted(DeletionVectorReader(snapshot_or_table.log_store.storage).read(change.file.deletion_vector))


def test_a_file_re_added_under_another_vector_is_the_difference_of_the_vectors(tmp_path):
    """No cdc file (delta-spark's DELETE with deletion vectors; a RESTORE):
    the rows the new vector hides and the old did not are deleted, the
    reverse inserted; each read as the file with every other row hidden."""
    t = DeltaTable(tmp_path)
    five = replace(add("a"), stats='{"numRecords":5}')
    commit(t, "CREATE TABLE", five, metadata=Metadata.new(SCHEMA, (), CDF, created_time=0))
    commit(t, "DELETE", five.remove(1), replace(five, deletion_vector=_vector(1, 3)))
    commit(
        t,
        "RESTORE",
        replace(five, deletion_vector=_vector(1, 3)).remove(2),
        replace(five, deletion_vector=_vector(3, 4)),
    )
    (v1,) = changes_between(t, 1, 1).files
    assert (v1.version, v1.change_type, v1.file.path) == (1, DELETE, "a")
    assert _hidden(t, v1) == [0, 2, 4]  # rows 1 and 3 deleted
    deleted, inserted = changes_between(t, 2, 2).files
    assert (deleted.change_type, _hidden(t, deleted)) == (DELETE, [0, 1, 2, 3])  # row 4
    assert (inserted.change_type, _hidden(t, inserted)) == (INSERT, [0, 2, 3, 4])  # row 1 back
    assert [f.file.path for f in changes_between(t, 0, 0).files] == ["a"]


def test_a_re_added_file_without_a_row_count_is_refused(tmp_path):
    t = DeltaTable(tmp_path)
    bare = replace(add("a"), stats=None)
    commit(t, "CREATE TABLE", bare, metadata=Metadata.new(SCHEMA, (), CDF, created_time=0))
    commit(t, "DELETE", bare.remove(1), replace(bare, deletion_vector=_vector(0)))
    with pytest.raises(ChangeDataUnavailableError, match=r"re-adds a under another deletion vector.*numRecords"):
        changes_between(t, 1)


def test_columns_named_like_the_feed_s_own_are_refused(tmp_path):
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "_Commit_Version", "type": "long", "nullable": True, "metadata": {}}]}
    )
    with pytest.raises(InvalidInputError, match="'_Commit_Version' is reserved"):
        commit(DeltaTable(tmp_path), "CREATE TABLE", metadata=Metadata.new(schema, (), CDF, created_time=0))
    assert not DeltaTable(tmp_path).exists()
