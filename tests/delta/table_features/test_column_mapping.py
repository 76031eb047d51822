"""Unit tests for ``delta/column_mapping.py``: physical names, ids, modes,
and the protocol that column mapping needs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata, Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping as cm
from airflow_delta_provider.delta.table_features.gate import check_writable, protocol_for


def field(name, type_, **metadata):
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata}


def mapped(name, type_, fid, physical):
    return field(name, type_, **{cm.ID_KEY: fid, cm.PHYSICAL_NAME_KEY: physical})


NESTED = {
    "type": "struct",
    "fields": [
        mapped("id", "long", 1, "col-a"),
        mapped(
            "s",
            {"type": "struct", "fields": [mapped("x", "integer", 3, "col-x")]},
            2,
            "col-s",
        ),
        mapped(
            "arr",
            {"type": "array", "containsNull": True,
             "elementType": {"type": "struct", "fields": [mapped("y", "string", 5, "col-y")]}},
            4,
            "col-arr",
        ),
        mapped("p", "string", 6, "col-p"),
    ],
}
NAME = {cm.MODE_KEY: "name", cm.MAX_ID_KEY: "6"}


def test_mode_is_read_case_insensitively_and_an_unknown_mode_is_refused():
    assert cm.mode_of({}) == "none"
    assert cm.mode_of({cm.MODE_KEY: "Name"}) == "name"
    with pytest.raises(UnsupportedFeatureError, match="'position'"):
        cm.mode_of({cm.MODE_KEY: "position"})


def test_physical_schema_renames_every_level_and_id_mode_adds_parquet_field_ids():
    by_name = cm.ColumnMapping.of(NESTED, NAME).physical_schema()
    assert [f["name"] for f in by_name["fields"]] == ["col-a", "col-s", "col-arr", "col-p"]
    assert by_name["fields"][1]["type"]["fields"][0]["name"] == "col-x"
    assert by_name["fields"][2]["type"]["elementType"]["fields"][0]["name"] == "col-y"
    assert cm.PARQUET_FIELD_ID_KEY not in by_name["fields"][0]["metadata"]

    by_id = cm.ColumnMapping.of(NESTED, {**NAME, cm.MODE_KEY: "id"}).physical_schema()
    assert by_id["fields"][0]["metadata"][cm.PARQUET_FIELD_ID_KEY] == 1
    assert by_id["fields"][1]["type"]["fields"][0]["metadata"][cm.PARQUET_FIELD_ID_KEY] == 3
    # Without mapping the schema is its own physical schema.
    assert cm.ColumnMapping.of(NESTED, {}).physical_schema() == NESTED


def test_paths_and_partition_values_translate_both_ways():
    mapping = cm.ColumnMapping.of(NESTED, NAME)
    assert mapping.physical_path(("S", "X")) == ("col-s", "col-x")
    with pytest.raises(InvalidInputError, match=r"s\.nope"):
        mapping.physical_path(("s", "nope"))
    assert mapping.logical_partition_values({"col-p": "a"}, ["p"]) == {"p": "a"}
    assert mapping.physical_partition_values({"p": "a"}) == {"col-p": "a"}
    plain = cm.ColumnMapping.of(NESTED, {})
    assert plain.logical_partition_values({"p": "a"}, ["p"]) == {"p": "a"}


def test_assign_gives_new_fields_fresh_ids_and_names_and_keeps_old_ones():
    schema = json.loads(json.dumps(NESTED))
    schema["fields"].append(field("new", {"type": "struct", "fields": [field("deep", "long")]}))
    schema["fields"][1]["type"]["fields"].append(field("z", "long"))
    out, conf = cm.assign(schema, NAME)
    assert conf[cm.MAX_ID_KEY] == "9"
    ids = {".".join(p): f["metadata"][cm.ID_KEY] for p, f in _walk(out)}
    assert {k: v for k, v in ids.items() if v <= 6} == {"id": 1, "s": 2, "s.x": 3, "arr": 4, "arr.element.y": 5, "p": 6}
    assert sorted(v for v in ids.values() if v > 6) == [7, 8, 9]
    physical = {".".join(p): f["metadata"][cm.PHYSICAL_NAME_KEY] for p, f in _walk(out)}
    assert physical["id"] == "col-a" and physical["new"].startswith("col-") and physical["new.deep"].startswith("col-")
    cm.check_mapping(out, conf)  # consistent


def test_turning_mapping_on_keeps_the_names_files_already_use():
    plain = {"type": "struct", "fields": [field("id", "long"), field("p", "string")]}
    before = Metadata.new(json.dumps(plain), ["p"], {}, created_time=0)
    after = cm.apply(Metadata.new(json.dumps(plain), ["p"], {cm.MODE_KEY: "name"}, created_time=0), before)
    physical = [f["metadata"][cm.PHYSICAL_NAME_KEY] for f in after.schema_json["fields"]]
    assert physical == ["id", "p"]
    assert after.configuration[cm.MAX_ID_KEY] == "2"


@pytest.mark.parametrize(("old", "new"), [("none", "id"), ("name", "none"), ("name", "id"), ("id", "name")])
def test_mode_changes_delta_spark_refuses_are_refused(old, new):
    schema = json.dumps(NESTED)
    before = Metadata.new(schema, [], {cm.MODE_KEY: old, cm.MAX_ID_KEY: "6"}, created_time=0)
    after = Metadata.new(schema, [], {cm.MODE_KEY: new, cm.MAX_ID_KEY: "6"}, created_time=0)
    with pytest.raises(UnsupportedFeatureError, match=f"from {old} to {new}"):
        cm.check_transition(before, after)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["fields"][1]["metadata"].update({cm.ID_KEY: 1}), "share column mapping id 1"),
        (lambda s: s["fields"][0]["metadata"].pop(cm.PHYSICAL_NAME_KEY), "lacks a column mapping id or physical name"),
        (lambda s: s["fields"][0]["metadata"].update({cm.PHYSICAL_NAME_KEY: "COL-S"}), "share the physical name"),
        (lambda s: s["fields"][0]["metadata"].update({cm.ID_KEY: 60}), "above"),
    ],
)
def test_a_damaged_mapping_is_refused(change, message):
    schema = json.loads(json.dumps(NESTED))
    change(schema)
    with pytest.raises(InvalidInputError, match=message):
        cm.check_mapping(schema, NAME)


def test_protocol_upgrades_as_delta_spark_does():
    md = Metadata.new(json.dumps(NESTED), [], NAME, created_time=0)
    assert protocol_for(Protocol(1, 2), md) == Protocol(2, 5)
    assert protocol_for(Protocol(2, 5), md) == Protocol(2, 5)
    features = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))
    assert protocol_for(features, md) == Protocol(
        3, 7, ("columnMapping", "deletionVectors"), ("appendOnly", "columnMapping", "deletionVectors", "invariants")
    )
    both = Metadata.new(json.dumps(NESTED), [], {**NAME, "delta.enableDeletionVectors": "true"}, created_time=0)
    upgraded = protocol_for(Protocol(1, 2), both)
    assert upgraded.min_reader_version == 3 and {"columnMapping", "deletionVectors"} <= set(upgraded.reader_features)
    check_writable(upgraded, both)
    check_writable(Protocol(2, 5), md)  # legacy writer 5 with nothing else in use


def test_skipping_reads_stats_and_partition_values_by_physical_name():
    schema = {"type": "struct", "fields": [mapped("id", "long", 1, "col-a"), mapped("p", "string", 2, "col-p")]}
    stats = {"numRecords": 2, "minValues": {"col-a": 10}, "maxValues": {"col-a": 20}, "nullCount": {"col-a": 0}}
    f = AddFile("f.parquet", {"col-p": "x"}, 1, 0, stats=json.dumps(stats))
    keep = lambda sql: prune_files([f], Predicate.parse(sql), schema, ["p"], mapping_mode="name")  # noqa: E731
    assert keep("id = 15") == [f]
    assert keep("id = 30") == []
    assert keep("p = 'x'") == [f]
    assert keep("p = 'y'") == []


def test_a_commit_needs_partition_values_keyed_by_physical_names(tmp_path, golden_dir):
    table = _mapped_copy(tmp_path, golden_dir)
    snap = table.snapshot()
    good = snap.files[0]
    logical = AddFile("x.parquet", snap.column_mapping.logical_partition_values(good.partition_values, ["part"]), 1, 0)
    txn = table.transaction("WRITE", {}, snap)
    txn.add(logical)
    with pytest.raises(InvalidInputError, match="partition values for"):
        txn.commit()
    assert table.latest_version() == snap.version


def _mapped_copy(tmp_path: Path, golden_dir: Path) -> DeltaTable:
    dst = tmp_path / "t"
    shutil.copytree(golden_dir / "dv-with-columnmapping", dst)
    return DeltaTable(str(dst))


def _walk(schema):
    from airflow_delta_provider.delta.schema.fields import walk_fields

    return list(walk_fields(schema))
