"""Type widening in the core: the rules, ``delta.typeChanges`` as delta-spark
records it, the protocol upgrade, the reader's validation, file skipping on
stats written before a change, and commits that race a widening."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.table_features import type_widening
from airflow_delta_provider.delta.actions.model import AddFile, Metadata, Protocol
from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    UnsupportedTypeChangeError,
)
from airflow_delta_provider.delta.table_features.gate import protocol_for, required_features
from airflow_delta_provider.delta.schema.types import merge_schemas, schema_string, struct_field, struct_type
from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files
from airflow_delta_provider.delta.table import DeltaTable

KEY = type_widening.TYPE_CHANGES_KEY


def _schema(**types) -> dict:
    return struct_type(struct_field(name, t) for name, t in types.items())


def _array(element) -> dict:
    return {"type": "array", "elementType": element, "containsNull": True}


def _map(key, value) -> dict:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}


# --- The rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("from_type", "to_type", "supported", "on_merge"),
    [
        ("byte", "short", True, True),
        ("byte", "long", True, True),
        ("integer", "long", True, True),
        ("long", "integer", False, False),
        ("float", "double", True, True),
        ("double", "float", False, False),
        ("integer", "double", True, False),  # supported, but only by an explicit change
        ("long", "double", False, False),
        ("date", "timestamp_ntz", True, True),
        ("date", "timestamp", False, False),
        ("decimal(10,2)", "decimal(12,2)", True, True),
        ("decimal(10,2)", "decimal(12,4)", True, True),  # k1 = k2 = 2
        ("decimal(10,2)", "decimal(11,3)", True, True),  # k1 = k2 = 1
        ("decimal(10,1)", "decimal(11,3)", False, False),  # an integer digit lost
        ("decimal(10,2)", "decimal(10,1)", False, False),
        ("decimal(10, 2)", "decimal(20,5)", True, True),
        ("integer", "decimal(10,0)", True, False),
        ("integer", "decimal(11,1)", True, False),
        ("integer", "decimal(9,0)", False, False),
        ("long", "decimal(20,0)", True, False),
        ("long", "decimal(20,1)", False, False),
        ("integer", "string", False, False),
        ("string", "integer", False, False),
    ],
)
def test_supported_changes_follow_the_protocol_and_merge_takes_a_subset(from_type, to_type, supported, on_merge):
    assert type_widening.is_supported(from_type, to_type) is supported
    assert type_widening.widens_on_merge(from_type, to_type) is on_merge


# --- Merging with type widening ------------------------------------------------------


def test_merge_widens_and_records_each_change_as_delta_spark_does():
    table = _schema(i="integer", f="float", d="date", m="decimal(10,2)", b="byte", s="string")
    data = _schema(i="long", f="double", d="timestamp_ntz", m="decimal(12,4)", b="integer", s="string")
    merged = merge_schemas(table, data, type_widening=True)
    by_name = {f["name"]: f for f in merged["fields"]}
    assert [f["type"] for f in merged["fields"]] == ["long", "double", "timestamp_ntz", "decimal(12,4)", "integer", "string"]
    assert by_name["i"]["metadata"] == {KEY: [{"fromType": "integer", "toType": "long"}]}
    assert by_name["m"]["metadata"] == {KEY: [{"fromType": "decimal(10,2)", "toType": "decimal(12,4)"}]}
    assert by_name["b"]["metadata"] == {KEY: [{"fromType": "byte", "toType": "integer"}]}
    assert by_name["s"]["metadata"] == {}


def test_nested_changes_are_recorded_on_the_nearest_struct_field_with_their_path():
    table = _schema(
        s=struct_type([struct_field("a", "integer")]),
        m=_map("integer", "float"),
        a=_array(_array("short")),
        e=_array(struct_type([struct_field("x", "date")])),
    )
    data = _schema(
        s=struct_type([struct_field("a", "long")]),
        m=_map("long", "double"),
        a=_array(_array("integer")),
        e=_array(struct_type([struct_field("x", "timestamp_ntz")])),
    )
    merged = merge_schemas(table, data, type_widening=True)
    s, m, a, e = merged["fields"]
    assert s["metadata"] == {}
    assert s["type"]["fields"][0]["metadata"] == {KEY: [{"fromType": "integer", "toType": "long"}]}
    assert m["metadata"][KEY] == [
        {"fromType": "integer", "toType": "long", "fieldPath": "key"},
        {"fromType": "float", "toType": "double", "fieldPath": "value"},
    ]
    assert a["metadata"][KEY] == [{"fromType": "short", "toType": "integer", "fieldPath": "element.element"}]
    assert e["metadata"] == {}  # the struct inside the array records its own field's change
    assert e["type"]["elementType"]["fields"][0]["metadata"][KEY] == [{"fromType": "date", "toType": "timestamp_ntz"}]
    assert {(p, c.field_path) for p, c in type_widening.all_changes(merged)} == {
        (("s", "a"), ()),
        (("m",), ("key",)),
        (("m",), ("value",)),
        (("a",), ("element", "element")),
        (("e", "element", "x"), ()),
    }


def test_a_second_widening_appends_to_the_history_and_keeps_other_metadata():
    once = merge_schemas(_schema(c="short"), _schema(c="integer"), type_widening=True)
    once["fields"][0]["metadata"]["comment"] = "kept"
    twice = merge_schemas(once, _schema(c="long"), type_widening=True)
    assert twice["fields"][0]["metadata"] == {
        "comment": "kept",
        KEY: [{"fromType": "short", "toType": "integer"}, {"fromType": "integer", "toType": "long"}],
    }
    # Data of the table's type changes nothing.
    assert merge_schemas(twice, _schema(c="long"), type_widening=True) == twice


def test_without_type_widening_a_widening_is_refused_with_the_diff():
    table = _schema(id="long", amount="integer", price="decimal(10,2)")
    data = _schema(id="long", amount="long", price="decimal(12,2)")
    with pytest.raises(SchemaMismatchError) as err:
        merge_schemas(table, data)
    text = str(err.value)
    assert "column amount: cannot widen integer in the table to long in the data" in text
    assert "column price: cannot widen decimal(10,2) in the table to decimal(12,2) in the data" in text
    assert "delta.enableTypeWidening=true" in text
    assert " |-- amount: integer" in text and " |-- amount: long" in text  # both schemas


def test_without_type_widening_byte_short_integer_still_merge_silently():
    merged = merge_schemas(_schema(c="byte"), _schema(c="integer"))
    assert merged == _schema(c="integer")  # delta-spark's old rule: same parquet type, no history


@pytest.mark.parametrize(
    ("from_type", "to_type", "says"),
    [
        ("integer", "double", "never turns an integer column into double or decimal"),
        ("long", "decimal(20,0)", "never turns an integer column into double or decimal"),
        ("decimal(10,1)", "decimal(11,3)", "may only widen, keeping its integer digits"),
        ("long", "integer", "cannot merge type integer in the data into long"),
        ("integer", "string", "cannot merge type string in the data into integer"),
    ],
)
def test_with_type_widening_other_changes_are_still_refused(from_type, to_type, says):
    with pytest.raises(SchemaMismatchError, match=says.replace("(", r"\(").replace(")", r"\)")):
        merge_schemas(_schema(c=from_type), _schema(c=to_type), type_widening=True)


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
