"""Unit tests for ``delta/actions.py``: JSON round-trips and tolerant reading."""

from __future__ import annotations

import json
import uuid

import pytest

from airflow_delta_provider.delta.actions.model import (
    TOKEN_TAG,
    AddFile,
    CommitInfo,
    DeletionVector,
    DomainMetadata,
    Format,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    action_from_json,
    action_to_json,
    parse_commit,
    serialize_commit,
)

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'

DV = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 3, offset=1, max_row_index=9)

# One fully populated instance of every action, as delta-spark would write it.
ACTIONS = [
    Protocol(1, 2),
    Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "appendOnly")),
    Metadata(
        id="7c1a-id",
        schema_string=SCHEMA,
        partition_columns=("p",),
        configuration={"delta.appendOnly": "true"},
        format=Format("parquet", {"k": "v"}),
        name="t",
        description="a table",
        created_time=1697587762295,
    ),
    AddFile(
        path="p=a%20b/part-00000.c000.snappy.parquet",
        partition_values={"p": "a b", "q": None},
        size=912,
        modification_time=1697587762000,
        data_change=True,
        stats='{"numRecords":50}',
        tags={"INSERTION_TIME": "1"},
        deletion_vector=DV,
        base_row_id=4,
        default_row_commit_version=2,
    ),
    RemoveFile(
        path="part-1.parquet",
        deletion_timestamp=1697587762273,
        data_change=True,
        extended_file_metadata=True,
        partition_values={},
        size=1091,
        stats='{"numRecords":3}',
        tags={"a": "b"},
        deletion_vector=DV,
        base_row_id=1,
        default_row_commit_version=0,
    ),
    Txn("app-1", 7, 1697587762000),
    DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":3}', False),
    CommitInfo({"timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append"}}),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: type(a).__name__)
def test_every_action_round_trips_through_json_text(action):
    line = json.dumps(action_to_json(action))
    assert action_from_json(json.loads(line)) == action


def test_round_trip_of_a_whole_commit_keeps_order_and_one_line_per_action():
    data = serialize_commit(ACTIONS)
    assert data.count(b"\n") == len(ACTIONS)
    assert all(len(json.loads(line)) == 1 for line in data.splitlines())
    assert list(parse_commit(data)) == ACTIONS


def test_minimal_actions_write_no_absent_optional_fields():
    assert action_to_json(Protocol(1, 2)) == {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    add = AddFile("f.parquet", {}, 10, 5)
    # partitionValues is always written, even when empty (PROTOCOL.md "Add File").
    assert action_to_json(add) == {
        "add": {"path": "f.parquet", "partitionValues": {}, "size": 10, "modificationTime": 5, "dataChange": True}
    }
    assert action_to_json(Txn("a", 1)) == {"txn": {"appId": "a", "version": 1}}


def test_metadata_json_has_delta_spark_field_names():
    md = ACTIONS[2]
    body = action_to_json(md)["metaData"]
    assert body["schemaString"] == SCHEMA
    assert body["partitionColumns"] == ["p"]
    assert body["format"] == {"provider": "parquet", "options": {"k": "v"}}
    assert body["createdTime"] == 1697587762295
    assert md.schema_json["fields"][0]["name"] == "id"


def test_metadata_new_gives_a_fresh_uuid_and_parquet_format():
    a = Metadata.new(SCHEMA, ["p"], {"x": "1"}, created_time=42)
    b = Metadata.new(SCHEMA, ["p"], {"x": "1"}, created_time=42)
    assert uuid.UUID(a.id) and a.id != b.id
    assert a.format == Format("parquet", {})
    assert a.partition_columns == ("p",) and a.created_time == 42


def test_unknown_actions_are_ignored():
    text = "\n".join(
        [
            json.dumps({"checkpointMetadata": {"version": 3}}),
            json.dumps({"someFutureAction": {"a": 1}}),
            json.dumps({"txn": {"appId": "x", "version": 3}}),
            "",
        ]
    )
    assert list(parse_commit(text)) == [Txn("x", 3)]


def test_unknown_fields_are_ignored_on_read():
    line = {
        "add": {
            "path": "f",
            "partitionValues": {},
            "size": 1,
            "modificationTime": 2,
            "dataChange": False,
            "clusteringProvider": "liquid",
            "someNewField": {"nested": [1, 2]},
        }
    }
    add = action_from_json(line)
    assert add == AddFile("f", {}, 1, 2, data_change=False, clustering_provider="liquid")  # a known field, kept
    assert "someNewField" not in action_to_json(add)["add"]
    proto = action_from_json({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "future": True}})
    assert proto == Protocol(1, 2)


def test_blank_and_whitespace_lines_are_skipped():
    data = b'\n  \n{"txn":{"appId":"a","version":1}}\r\n\n'
    assert list(parse_commit(data)) == [Txn("a", 1)]


def test_metadata_drops_null_configuration_values():
    md = Metadata.from_json({"id": "x", "schemaString": SCHEMA, "configuration": {"a": "1", "b": None}})
    assert md.configuration == {"a": "1"}


def test_remove_copies_every_field_of_the_add():
    add = ACTIONS[3]
    rm = add.remove(123)
    assert rm == RemoveFile(
        path=add.path,
        deletion_timestamp=123,
        data_change=True,
        extended_file_metadata=True,
        partition_values=add.partition_values,
        size=add.size,
        stats=add.stats,
        tags=add.tags,
        deletion_vector=add.deletion_vector,
        base_row_id=add.base_row_id,
        default_row_commit_version=add.default_row_commit_version,
    )
    # The path string is reused exactly, still URI-encoded.
    assert action_to_json(rm)["remove"]["path"] == "p=a%20b/part-00000.c000.snappy.parquet"
    assert rm.key == add.key
    assert add.remove(5, data_change=False).data_change is False


def test_remove_partition_values_are_a_copy():
    add = AddFile("f", {"p": "1"}, 1, 1)
    rm = add.remove(1)
    rm.partition_values["p"] = "2"
    assert add.partition_values == {"p": "1"}


def test_deletion_vector_unique_id_and_file_key():
    assert DV.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@1"
    assert DeletionVector("i", "abc", 1, 1).unique_id == "iabc"
    plain = AddFile("f", {}, 1, 1)
    with_dv = AddFile("f", {}, 1, 1, deletion_vector=DV)
    assert plain.key == ("f", None)
    assert with_dv.key == ("f", DV.unique_id)
    # A DV whose fields are all null (a checkpoint row) is no DV.
    assert DeletionVector.from_json({"storageType": None, "pathOrInlineDv": None}) is None


def test_parsed_stats_prefers_stats_parsed_and_tolerates_bad_json():
    assert AddFile("f", {}, 1, 1, stats='{"numRecords": 4}').num_records == 4
    assert AddFile("f", {}, 1, 1, stats="not json").parsed_stats() is None
    assert AddFile("f", {}, 1, 1).num_records is None
    parsed = AddFile("f", {}, 1, 1, stats_parsed={"numRecords": 9})
    assert parsed.num_records == 9


def test_commit_info_keeps_arbitrary_content_and_exposes_token():
    raw = {
        "timestamp": 5,
        "operation": "UPDATE",
        "txnId": "t-1",
        "operationParameters": {"nested": {"a": [1, 2]}, "flag": True},
        "tags": {TOKEN_TAG: "tok", "other": "x"},
        "clientVersion": "delta-rs.0.1",
    }
    info = action_from_json({"commitInfo": raw})
    assert isinstance(info, CommitInfo)
    assert info.raw == raw
    assert (info.operation, info.timestamp, info.txn_id, info.token) == ("UPDATE", 5, "t-1", "tok")
    assert CommitInfo({"tags": "not-a-dict"}).token is None
    assert CommitInfo({}).token is None


def test_serialize_keeps_non_ascii_as_utf8():
    add = AddFile("p=é/f.parquet", {"p": "é"}, 1, 1)
    data = serialize_commit([add])
    assert "é".encode() in data
    assert list(parse_commit(data)) == [add]


def test_add_data_change_defaults_to_true_when_absent():
    assert AddFile.from_json({"path": "f", "partitionValues": {}, "size": 1, "modificationTime": 1}).data_change
