"""Unit tests for ``delta/actions/fields.py``: one definition drives the JSON codec."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.checkpoint_codec import checkpoint_type
from airflow_delta_provider.delta.actions.fields import LogRecord, int_or_zero, log, log_fields, log_name
from airflow_delta_provider.delta.actions.model import AddFile, DeletionVector, Metadata, RemoveFile
from tests.delta.actions.records import FULL, NOT_IN_LOG


def _id(record: LogRecord) -> str:
    return type(record).__name__


@pytest.mark.parametrize("record", FULL, ids=_id)
def test_every_dataclass_field_is_defined_in_the_log(record):
    """A field added without a log definition would be silently left out of JSON and checkpoints."""
    cls = type(record)
    defined = {f.attr for f in log_fields(cls)}
    undefined = {f.name for f in dataclasses.fields(cls)} - defined - {a for c, a in NOT_IN_LOG if c is cls}
    assert not undefined


@pytest.mark.parametrize("record", FULL, ids=_id)
def test_to_json_emits_every_defined_field_in_definition_order(record):
    fields = log_fields(type(record))
    assert all(getattr(record, f.attr) is not None for f in fields), "the fixture must set every field"
    assert list(record.to_json()) == [f.name for f in fields]


@pytest.mark.parametrize("record", FULL, ids=_id)
def test_json_text_round_trip_gives_the_record_back(record):
    text = json.dumps(record.to_json())
    assert type(record).from_json(json.loads(text)) == record


def test_add_json_keys_keep_delta_spark_order():
    """The written key order is pinned: interop and golden tests compare bytes."""
    assert [f.name for f in log_fields(AddFile)] == [
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
        "stats",
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
    ]
    assert [f.name for f in log_fields(Metadata)] == [
        "id",
        "name",
        "description",
        "format",
        "schemaString",
        "partitionColumns",
        "configuration",
        "createdTime",
    ]
    assert [f.name for f in log_fields(DeletionVector)][:3] == ["storageType", "pathOrInlineDv", "offset"]


def test_positional_constructors_keep_their_required_fields_first():
    """Fields placed before a required one for the JSON order are keyword-only."""
    md = Metadata("id", "{}", ("p",), {"k": "v"})
    assert (md.id, md.schema_string, md.partition_columns, md.configuration) == ("id", "{}", ("p",), {"k": "v"})
    dv = DeletionVector("i", "abc", 3, 1)
    assert (dv.size_in_bytes, dv.cardinality, dv.offset) == (3, 1, None)
    with pytest.raises(TypeError):
        DeletionVector("u", "abc", 3, 1, 7)


def test_log_name_maps_attributes_to_delta_names():
    assert log_name(AddFile, "clustering_provider") == "clusteringProvider"
    assert log_name(RemoveFile, "deletion_vector") == "deletionVector"
    with pytest.raises(KeyError):
        log_name(AddFile, "stats_parsed")


def test_missing_required_field_is_a_key_error_and_absent_ones_take_their_default():
    with pytest.raises(KeyError):
        AddFile.from_json({"size": 1})
    add = AddFile.from_json({"path": "f"})
    assert (add.size, add.modification_time, add.data_change, add.partition_values) == (0, 0, True, {})
    assert AddFile.from_json({"path": "f", "dataChange": None}).data_change is False


def test_a_new_field_needs_one_definition_only():
    """A record defined with ``log`` fields gets its JSON and checkpoint forms with no other code."""

    @dataclass(frozen=True)
    class Probe(LogRecord):
        first: str = field(metadata=log("firstName", pa.string(), required=True))
        count: int = field(default=0, metadata=log("theCount", pa.int64(), decode=int_or_zero))
        extra: dict[str, Any] | None = field(default=None, metadata=log("extraMap"))

    probe = Probe("a", 2, {"x": 1})
    assert probe.to_json() == {"firstName": "a", "theCount": 2, "extraMap": {"x": 1}}
    assert Probe.from_json({"firstName": "a"}) == Probe("a")
    assert checkpoint_type(Probe).names == ["firstName", "theCount"]  # no arrow type: not a checkpoint column
