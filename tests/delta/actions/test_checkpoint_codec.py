"""Unit tests for ``delta/actions/checkpoint_codec.py``: checkpoint schema and rows
come from the same definition as the JSON, and replay reads them back."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.checkpoint_codec import (
    checkpoint_fields,
    checkpoint_row,
    checkpoint_type,
    struct_array,
    struct_rows,
)
from airflow_delta_provider.delta.actions.fields import Checkpoint, LogRecord, log_fields
from airflow_delta_provider.delta.actions.model import (
    AddCDCFile,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.checkpoint.rows import CHECKPOINT_SCHEMA, V2_CHECKPOINT_SCHEMA
from airflow_delta_provider.delta.log.sidecars import SidecarFile
from tests.delta.actions.records import FULL

#: Records a checkpoint holds (a ``cdc`` action never is in one).
IN_CHECKPOINTS = [r for r in FULL if not isinstance(r, AddCDCFile)]


def _id(record: LogRecord) -> str:
    return type(record).__name__


def _as_read_back(record: LogRecord) -> LogRecord:
    """``record`` as a checkpoint keeps it: fields it does not write are absent."""
    dropped = {f.attr: None for f in log_fields(type(record)) if f.checkpoint in (Checkpoint.READ, Checkpoint.NONE)}
    return dataclasses.replace(record, **dropped)


@pytest.mark.parametrize("record", IN_CHECKPOINTS, ids=_id)
def test_checkpoint_row_and_type_have_every_written_field(record):
    names = [f.name for f in checkpoint_fields(type(record))]
    assert list(checkpoint_row(record)) == names
    assert checkpoint_type(type(record)).names == names
    written = {f.name for f in log_fields(type(record)) if f.checkpoint in (Checkpoint.COLUMN, Checkpoint.LAST)}
    assert set(names) == written


@pytest.mark.parametrize("record", IN_CHECKPOINTS, ids=_id)
def test_struct_column_round_trip_gives_the_record_back(record):
    cls = type(record)
    column = struct_array(cls, [record, record])
    assert column.type == checkpoint_type(cls)
    assert pa.array([checkpoint_row(record)], checkpoint_type(cls)).to_pylist() == column.to_pylist()[:1]
    back = [cls.from_json(row) for row in struct_rows(cls, column)]
    assert back == [_as_read_back(record)] * 2


def test_overrides_replace_a_value_in_the_rows():
    add = next(r for r in FULL if isinstance(r, AddFile))
    row = struct_array(AddFile, [add], {"data_change": lambda _: True}).to_pylist()[0]
    assert row["dataChange"] is True and row["path"] == add.path


def test_struct_rows_fill_absent_columns_and_require_required_ones():
    column = pa.array([{"path": "f", "size": 3}], pa.struct([("path", pa.string()), ("size", pa.int64())]))
    (row,) = struct_rows(AddFile, column)
    assert row["path"] == "f" and row["deletionVector"] is None
    assert AddFile.from_json(row).data_change is False  # a checkpoint row without dataChange is no data change
    with pytest.raises(KeyError):
        struct_rows(AddFile, pa.array([{"size": 3}], pa.struct([("size", pa.int64())])))


def test_null_nested_records_are_null_structs():
    add = AddFile("f", {}, 1, 2)
    column = struct_array(AddFile, [add])
    dv = column.field(column.type.get_field_index("deletionVector"))
    assert dv.null_count == 1


def test_checkpoint_schema_is_the_definitions_in_delta_spark_order():
    actions = (Txn, AddFile, RemoveFile, Metadata, Protocol, DomainMetadata)
    assert pa.schema([(c.KEY, checkpoint_type(c)) for c in actions]) == CHECKPOINT_SCHEMA
    assert V2_CHECKPOINT_SCHEMA.field("sidecar").type == checkpoint_type(SidecarFile)
    # Pinned: ``stats`` last in ``add``; tombstones without ``stats`` and ``tags``.
    assert CHECKPOINT_SCHEMA.field("add").type.names == [
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
        "stats",
    ]
    assert CHECKPOINT_SCHEMA.field("remove").type.names == [
        "path",
        "deletionTimestamp",
        "dataChange",
        "extendedFileMetadata",
        "partitionValues",
        "size",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
    ]
    dv = CHECKPOINT_SCHEMA.field("add").type.field("deletionVector").type
    assert [(f.name, f.type) for f in dv] == [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
