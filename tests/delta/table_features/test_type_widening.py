"""The type widening feature in the core: stripping a source's type history,
partition columns, the protocol upgrade, the reader's validation, file
skipping on stats written before a change, and commits that race a
widening. (Its rules and ``delta.typeChanges``: tests/delta/schema/test_widening.py.)"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddFile, Metadata, Protocol
from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    UnsupportedTypeChangeError,
)
from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files
from airflow_delta_provider.delta.schema.evolution import merge_schemas
from airflow_delta_provider.delta.schema.types import schema_string, struct_field, struct_type
from airflow_delta_provider.delta.schema.widening import TYPE_CHANGES_KEY
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import type_widening
from airflow_delta_provider.delta.table_features.gate import protocol_for, required_features

KEY = TYPE_CHANGES_KEY


def _schema(**types) -> dict:
    return struct_type(struct_field(name, t) for name, t in types.items())


# --- Schemas ---------------------------------------------------------------------------


def test_a_source_brings_no_type_history_of_its_own():
    widened = merge_schemas(_schema(c="integer"), _schema(c="long"), type_widening=True)
    assert type_widening.strip(widened) == _schema(c="long")


def test_widening_a_date_partition_column_to_timestamp_ntz_is_refused():
    old, new = _schema(p="date", d="date"), _schema(p="timestamp_ntz", d="timestamp_ntz")
    type_widening.check_partition_changes(old, new, [])  # data columns may widen
    with pytest.raises(SchemaMismatchError, match="partition column p from date to timestamp_ntz"):
        type_widening.check_partition_changes(old, new, ["P"])
    type_widening.check_partition_changes(_schema(p="integer"), _schema(p="long"), ["p"])


# --- The protocol ---------------------------------------------------------------------


def _md(schema: dict, configuration: dict | None = None) -> Metadata:
    return Metadata.new(schema_string(schema), (), configuration or {}, created_time=0)


def test_enabling_type_widening_upgrades_the_protocol_as_delta_spark_does():
    md = table_properties.with_properties(_md(_schema(c="integer")), {"delta.enableTypeWidening": "TRUE"})
    assert md.configuration == {"delta.enableTypeWidening": "true"}
    assert required_features(md) == {"typeWidening"}
    assert protocol_for(Protocol(1, 2), md) == Protocol(
        3, 7, ("typeWidening",), ("appendOnly", "invariants", "typeWidening")
    )
    assert protocol_for(Protocol(1, 2), _md(_schema(c="integer"), {"delta.enableTypeWidening": "false"})) == Protocol(1, 2)


def test_set_tblproperties_enables_it_as_delta_spark_did_on_the_golden_table(tmp_path, new_table, duckdb_delta):
    """golden type-widening, version 1: SET TBLPROPERTIES on a 1/2 table
    is one commit of metaData and the upgraded protocol."""
    from airflow_delta_provider.delta.operations.alter import SetProperties, alter_table

    new_table(tmp_path / "t", pa.schema([("c", pa.int32())]))
    table = DeltaTable(str(tmp_path / "t"))
    assert alter_table(table, SetProperties({"delta.enableTypeWidening": "true"})).version == 1
    snap = table.snapshot()
    assert snap.protocol == Protocol(3, 7, ("typeWidening",), ("appendOnly", "invariants", "typeWidening"))
    assert snap.metadata.configuration["delta.enableTypeWidening"] == "true"
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{tmp_path / 't'}')").fetchone() == (0,)


def test_recorded_changes_need_the_feature_even_with_the_property_off():
    widened = merge_schemas(_schema(c="integer"), _schema(c="long"), type_widening=True)
    assert required_features(_md(widened, {"delta.enableTypeWidening": "false"})) == {"typeWidening"}


def test_a_preview_table_keeps_its_preview_feature():
    preview = Protocol(3, 7, ("typeWidening-preview",), ("appendOnly", "invariants", "typeWidening-preview"))
    md = _md(_schema(c="long"), {"delta.enableTypeWidening": "true"})
    assert protocol_for(preview, md) is preview


def test_a_bad_property_value_is_refused():
    with pytest.raises(InvalidInputError, match="must be true or false"):
        table_properties.with_properties(_md(_schema(c="integer")), {"delta.enableTypeWidening": "yes"})


# --- Reading -----------------------------------------------------------------------------


def _write_log(root: Path, schema: dict, protocol: dict) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    actions = [
        {"protocol": protocol},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {}}},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"fromType": "string", "toType": "integer"}, "string -> integer"),
        ({"fromType": "long", "toType": "integer", "fieldPath": "element"}, "column c.element"),
    ],
)
def test_a_type_change_the_protocol_does_not_allow_makes_the_table_unreadable(tmp_path, change, named):
    field = struct_field("c", "integer", metadata={KEY: [change]})
    _write_log(tmp_path, struct_type([field]), {"minReaderVersion": 3, "minWriterVersion": 7,
                                                 "readerFeatures": ["typeWidening"], "writerFeatures": ["typeWidening"]})
    with pytest.raises(UnsupportedTypeChangeError, match="type widening does not support") as err:
        DeltaTable(str(tmp_path)).snapshot()
    assert named in str(err.value)


def test_a_supported_change_reads(tmp_path):
    field = struct_field("c", "long", metadata={KEY: [{"fromType": "integer", "toType": "long"}]})
    _write_log(tmp_path, struct_type([field]), {"minReaderVersion": 3, "minWriterVersion": 7,
                                                 "readerFeatures": ["typeWidening"], "writerFeatures": ["typeWidening"]})
    assert DeltaTable(str(tmp_path)).snapshot().schema["fields"][0]["type"] == "long"


# --- Skipping on stats of the old type ---------------------------------------------------


def _file(name: str, low, high) -> AddFile:
    stats = {"numRecords": 1, "minValues": {"c": low}, "maxValues": {"c": high}, "nullCount": {"c": 0}}
    return AddFile(name, {}, 1, 0, True, stats=json.dumps(stats))


def test_a_float_bound_written_before_widening_to_double_keeps_its_file():
    """float32(0.7) is 0.699999988...: its stats say 0.7, above the value it
    reads as once the column is a double. The bound must not prune it."""
    widened = merge_schemas(_schema(c="float"), _schema(c="double"), type_widening=True)
    value = float(pa.array([0.7], pa.float32()).cast(pa.float64())[0].as_py())
    old = _file("old", 0.7, 0.7)
    kept = prune_files([old], Predicate.parse(f"c = {value!r}"), widened, [])
    assert kept == [old]
    # Without the history, the same stats would (rightly, for a double column) prune it.
    assert prune_files([old], Predicate.parse(f"c = {value!r}"), _schema(c="double"), []) == []


def test_date_stats_bound_a_timestamp_ntz_column_at_midnight():
    widened = merge_schemas(_schema(c="date"), _schema(c="timestamp_ntz"), type_widening=True)
    old = _file("old", "2024-01-02", "2024-01-02")
    assert prune_files([old], Predicate.parse("c = '2024-01-02 00:00:00'"), widened, []) == [old]
    assert prune_files([old], Predicate.parse("c >= '2024-01-02 00:00:01'"), widened, []) == []
    assert prune_files([old], Predicate.parse("c < '2024-01-02 00:00:00'"), widened, []) == []


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([], "long"),
        ([("integer", "long")], "long"),
        ([("decimal(10,2)", "decimal(12,4)")], "decimal(12,4)"),
        ([("float", "double")], "float"),
        ([("integer", "double")], "double"),
        ([("date", "timestamp_ntz")], "timestamp_ntz"),
        ([("string", "long")], ""),  # not a change we know: no bounds at all
    ],
)
def test_stats_type(history, expected):
    own = history[-1][1] if history else "long"
    field = struct_field("c", own, metadata={KEY: [{"fromType": f, "toType": t} for f, t in history]} if history else {})
    assert type_widening.stats_type(field) == expected


# --- Commits -------------------------------------------------------------------------------


def _create(tmp_path: Path, new_table, data_file, protocol: Protocol | None = None) -> DeltaTable:
    root = tmp_path / "t"
    new_table(root, pa.schema([("c", pa.int32())]), configuration={"delta.enableTypeWidening": "true"},
              adds=[data_file(root, pa.table({"c": pa.array([1], pa.int32())}))])
    table = DeltaTable(str(root))
    if protocol is not None:
        txn = table.transaction("SET TBLPROPERTIES", {}, table.snapshot())
        txn.update_protocol(protocol)
        txn.commit()
    return table


def _widen(table: DeltaTable, snapshot=None):
    snap = snapshot or table.snapshot()
    txn = table.transaction("WRITE", {"mode": "Append"}, snap)
    widened = merge_schemas(snap.schema, _schema(c="long"), type_widening=True)
    txn.update_metadata(replace(snap.metadata, schema_string=schema_string(widened)))
    return txn


def test_a_writer_that_read_before_a_widening_fails_with_metadata_changed(tmp_path, new_table, data_file):
    table = _create(tmp_path, new_table, data_file)
    stale = table.snapshot()
    other = table.transaction("WRITE", {"mode": "Append"}, stale)
    other.add(data_file(table.root, pa.table({"c": pa.array([2], pa.int32())})))
    _widen(table).commit()
    with pytest.raises(MetadataChangedError):
        other.commit()
    assert table.latest_version() == 1


def test_a_widening_that_loses_to_an_append_commits_after_it(tmp_path, new_table, data_file):
    table = _create(tmp_path, new_table, data_file)
    widening = _widen(table)
    append = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    append.add(data_file(table.root, pa.table({"c": pa.array([2], pa.int32())})))
    append.commit()
    assert widening.commit().version == 2
    snap = table.snapshot()
    assert snap.schema["fields"][0]["metadata"] == {KEY: [{"fromType": "integer", "toType": "long"}]}
    assert len(snap.files) == 2


def test_a_preview_table_dates_its_changes_with_the_version_that_made_them(tmp_path, new_table, data_file):
    """delta-spark's preview writes ``tableVersion``; a retry restamps it."""
    preview = Protocol(3, 7, ("typeWidening-preview",), ("appendOnly", "invariants", "typeWidening-preview"))
    table = _create(tmp_path, new_table, data_file, preview)
    assert table.snapshot().protocol == preview
    widening = _widen(table)  # read at version 1: its first attempt is 2
    append = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    append.add(data_file(table.root, pa.table({"c": pa.array([2], pa.int32())})))
    append.commit()
    assert widening.commit().version == 3
    snap = table.snapshot()
    assert snap.protocol == preview
    assert snap.schema["fields"][0]["metadata"][KEY] == [{"tableVersion": 3, "fromType": "integer", "toType": "long"}]
    # A later metadata change leaves the recorded version alone.
    txn = table.transaction("WRITE", {"mode": "Append"}, snap)
    txn.update_metadata(replace(snap.metadata, schema_string=schema_string(snap.schema)))
    txn.commit()
    assert table.snapshot().schema["fields"][0]["metadata"][KEY][0]["tableVersion"] == 3
