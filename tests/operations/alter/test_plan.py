"""Tests for ``delta/schema_changes.py``: ALTER TABLE as metadata-only
commits, checked by delta-rs (DataFusion) and DuckDB reading the table
after each change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping as cm
from airflow_delta_provider.operations.alter.plan import (
    AddColumns,
    AlterColumn,
    DropColumns,
    NewColumn,
    RenameColumn,
    SetProperties,
    UnsetProperties,
    alter_table,
    change_from_json,
    parse_column_path,
)

DATA = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["a", "b", None]),
        "s": pa.array([{"x": 1}, {"x": 2}, {"x": 3}], pa.struct([("x", pa.int32())])),
    }
)


@pytest.fixture
def plain_table(tmp_path, data_file, new_table) -> DeltaTable:
    """An unmapped table of DATA in two partitions of ``p``."""
    root = tmp_path / "plain"
    adds = [
        data_file(root, DATA.slice(0, 2), {"p": "x"}),
        data_file(root, DATA.slice(2), {"p": "y"}),
    ]
    schema = DATA.schema.append(pa.field("p", pa.string()))
    new_table(root, schema, ["p"], adds=adds)
    return DeltaTable(str(root))


def _oracles(path: str, duckdb_delta: Any) -> list[pa.Table]:
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    rs = pa.table(QueryBuilder().register("t", RsTable(path)).execute("SELECT * FROM t").read_all())
    duck = duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()
    return [rs, duck]


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _data_files(table: DeltaTable) -> list[str]:
    return sorted(f.path for f in table.snapshot().files)


def _last_commit_info(table: DeltaTable) -> dict:
    version = table.latest_version()
    text = (
        Path(table.snapshot().table_root.removeprefix("file://")) / "_delta_log" / f"{version:020d}.json"
    ).read_text()
    return next(json.loads(line)["commitInfo"] for line in text.splitlines() if '"commitInfo"' in line)


def test_rename_and_drop_need_column_mapping_and_change_nothing_without_it(plain_table):
    for change in (RenameColumn("name", "label"), DropColumns(("name",))):
        with pytest.raises(UnsupportedFeatureError, match="enable_column_mapping"):
            alter_table(plain_table, change)
    assert plain_table.latest_version() == 0


def test_rename_with_mapping_turned_on_is_metadata_only_and_readers_follow(plain_table, duckdb_delta, snapshot_rows):
    files = _data_files(plain_table)
    result = alter_table(plain_table, RenameColumn("name", "label"), enable_column_mapping=True, token="t-1")
    snap = plain_table.snapshot()
    assert result.version == 1 and _data_files(plain_table) == files
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (2, 5)
    assert snap.column_mapping.mode == "name"
    assert [f["metadata"][cm.PHYSICAL_NAME_KEY] for f in snap.schema["fields"]] == ["id", "name", "s", "p"]
    info = _last_commit_info(plain_table)
    assert info["operation"] == "RENAME COLUMN"
    assert info["operationParameters"] == {"oldColumnPath": "name", "newColumnPath": "label"}
    expected = [
        {"id": 1, "label": "a", "s": {"x": 1}, "p": "x"},
        {"id": 2, "label": "b", "s": {"x": 2}, "p": "x"},
        {"id": 3, "label": None, "s": {"x": 3}, "p": "y"},
    ]
    for got in [snapshot_rows(snap), *_oracles(str(plain_table.snapshot().table_root), duckdb_delta)]:
        assert _rows(got.select(["id", "label", "s", "p"])) == _rows(pa.Table.from_pylist(expected))


def test_nested_and_partition_columns_can_be_renamed(plain_table, duckdb_delta):
    alter_table(plain_table, RenameColumn("s.x", "xx"), enable_column_mapping=True)
    alter_table(plain_table, RenameColumn("p", "part"))
    snap = plain_table.snapshot()
    assert snap.partition_columns == ["part"]
    assert snap.files_matching("part = 'y'") == [f for f in snap.files if "y" in f.partition_values.values()]
    for got in _oracles(str(snap.table_root), duckdb_delta):
        assert sorted(r["s"]["xx"] for r in got.to_pylist()) == [1, 2, 3]
        assert sorted(r["part"] for r in got.to_pylist()) == ["x", "x", "y"]


def test_drop_columns_hides_their_data_and_a_new_column_of_the_same_name_starts_empty(plain_table, duckdb_delta):
    alter_table(plain_table, DropColumns(("name",)), enable_column_mapping=True)
    alter_table(plain_table, AddColumns((NewColumn("name", "string"),)))
    snap = plain_table.snapshot()
    new_field = snap.schema["fields"][-1]
    assert new_field["name"] == "name" and new_field["metadata"][cm.PHYSICAL_NAME_KEY].startswith("col-")
    assert snap.configuration[cm.MAX_ID_KEY] == "6"  # 4 columns, s.x, then the new one
    for got in _oracles(str(snap.table_root), duckdb_delta):
        assert [r["name"] for r in got.to_pylist()] == [None, None, None]


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (DropColumns(("p",)), InvalidInputError, "cannot drop partition column p"),
        (DropColumns(("nope",)), SchemaMismatchError, "column nope does not exist"),
        (DropColumns(("s.x",)), InvalidInputError, "last column of struct s"),
        (DropColumns(("id", "name", "s")), InvalidInputError, "every data column"),
        (RenameColumn("id", "NAME"), SchemaMismatchError, "column 'name' exists"),
        (RenameColumn("s.nope", "y"), SchemaMismatchError, r"s\.nope does not exist"),
        (AddColumns((NewColumn("ID", "long"),)), SchemaMismatchError, "already exists"),
        (AddColumns((NewColumn("c", "long", nullable=False),)), InvalidInputError, "NOT NULL"),
        (AddColumns((NewColumn("c", "bigint_wrong"),)), InvalidInputError, "invalid type"),
        (AddColumns((NewColumn("id.c", "long"),)), InvalidInputError, "id is not a struct"),
        (AlterColumn("id", nullable=False), InvalidInputError, "cannot make id NOT NULL"),
        (AlterColumn("id"), InvalidInputError, "needs a comment or a nullability"),
        (SetProperties({"delta.enableIcebergCompatV2": "true"}), UnsupportedFeatureError, "enableIcebergCompatV2"),
        (SetProperties({"delta.appendOnly": "maybe"}), InvalidInputError, "true or false"),
        (UnsetProperties(("nope",)), InvalidInputError, "no such property"),
        (UnsetProperties((cm.MODE_KEY,)), UnsupportedFeatureError, "cannot be turned off"),
        (SetProperties({cm.MODE_KEY: "id"}), UnsupportedFeatureError, "from name to id"),
    ],
)
def test_bad_changes_are_refused_and_write_nothing(plain_table, change, error, message):
    alter_table(plain_table, SetProperties({cm.MODE_KEY: "name"}))
    before = plain_table.latest_version()
    with pytest.raises(error, match=message):
        alter_table(plain_table, change)
    assert plain_table.latest_version() == before


def test_add_columns_top_level_and_nested_without_mapping(plain_table, duckdb_delta):
    change = AddColumns((NewColumn("score", "double", comment="points"), NewColumn("s.y", "string")))
    alter_table(plain_table, change)
    snap = plain_table.snapshot()
    assert snap.column_mapping.mode == "none"
    assert snap.schema["fields"][-1] == {
        "name": "score",
        "type": "double",
        "nullable": True,
        "metadata": {"comment": "points"},
    }
    assert [f["name"] for f in snap.schema["fields"][2]["type"]["fields"]] == ["x", "y"]
    for got in _oracles(str(snap.table_root), duckdb_delta):
        assert {r["score"] for r in got.to_pylist()} == {None}
        assert {r["s"]["y"] for r in got.to_pylist()} == {None}
    with pytest.raises(InvalidInputError, match="invalid column name"):
        alter_table(plain_table, AddColumns((NewColumn("a b", "long"),)))  # needs mapping for a space


def test_add_columns_records_its_columns_as_delta_spark_does():
    """DESCRIBE HISTORY's ``columns``: each column's full path as its name and the type's name, no more."""
    change = AddColumns(
        (
            NewColumn("score", "double"),
            NewColumn(
                "s.y",
                {"type": "struct", "fields": [{"name": "z", "type": "integer", "nullable": True, "metadata": {}}]},
            ),
        )
    )
    assert json.loads(change.parameters()["columns"]) == [
        {"column": {"name": "score", "type": "double", "nullable": True, "metadata": {}}},
        {"column": {"name": "s.y", "type": "struct", "nullable": True, "metadata": {}}},
    ]


def test_comment_and_nullability_changes(tmp_path, data_file, new_table):
    root = tmp_path / "nn"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    new_table(root, schema, adds=[data_file(root, pa.table({"id": pa.array([1], pa.int64())}, schema=schema))])
    table = DeltaTable(str(root))
    alter_table(table, AlterColumn("id", comment="the key"))
    alter_table(table, AlterColumn("ID", nullable=True))
    f = table.snapshot().schema["fields"][0]
    assert f["nullable"] is True and f["metadata"]["comment"] == "the key"
    assert _last_commit_info(table)["operation"] == "CHANGE COLUMN"


def test_properties_set_and_unset(plain_table):
    alter_table(plain_table, SetProperties({"delta.appendOnly": "TRUE", "owner": "team-a"}))
    assert plain_table.snapshot().configuration == {"delta.appendOnly": "true", "owner": "team-a"}
    alter_table(plain_table, UnsetProperties(("owner", "absent"), if_exists=True))
    assert plain_table.snapshot().configuration == {"delta.appendOnly": "true"}
    assert _last_commit_info(plain_table)["operationParameters"] == {
        "properties": '["owner", "absent"]',
        "ifExists": True,
    }
    with pytest.raises(InvalidInputError, match="changes nothing"):
        alter_table(plain_table, SetProperties({"delta.appendOnly": "true"}))


def test_turning_on_id_mode_needs_a_new_table_but_name_mode_works_by_property(plain_table):
    alter_table(plain_table, SetProperties({cm.MODE_KEY: "name"}))
    snap = plain_table.snapshot()
    assert snap.column_mapping.mode == "name" and snap.protocol.min_reader_version == 2


def test_a_concurrent_metadata_change_makes_the_later_one_fail(plain_table):
    snap = plain_table.snapshot()
    from airflow_delta_provider.operations.alter.plan import plan

    change = AddColumns((NewColumn("a", "long"),))
    txn = plain_table.transaction(change.operation, parameters=change.parameters(), snapshot=snap)
    txn.update_metadata(plan(snap.metadata, change))
    alter_table(plain_table, AddColumns((NewColumn("b", "long"),)))  # slips in first
    with pytest.raises(MetadataChangedError):
        txn.commit(metrics={})
    assert [f["name"] for f in plain_table.snapshot().schema["fields"]][-1] == "b"


def test_a_concurrent_append_does_not_stop_a_schema_change(plain_table, data_file):
    snap = plain_table.snapshot()
    from airflow_delta_provider.operations.alter.plan import plan

    change = AddColumns((NewColumn("a", "long"),))
    txn = plain_table.transaction(change.operation, parameters=change.parameters(), snapshot=snap)
    txn.update_metadata(plan(snap.metadata, change))
    blind = plain_table.transaction("WRITE", {}, plain_table.snapshot())
    blind.add(data_file(snap.table_root.removeprefix("file://"), DATA.slice(0, 1), {"p": "z"}))
    blind.commit()
    assert txn.commit(metrics={}).version == 2
    assert len(plain_table.snapshot().files) == 3


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("a", ("a",)),
        ("a.b", ("a", "b")),
        ("`a.b`.c", ("a.b", "c")),
        ("`we``ird`", ("we`ird",)),
        (" a . b ", ("a", "b")),
    ],
)
def test_column_paths(text, path):
    assert parse_column_path(text) == path


@pytest.mark.parametrize("text", ["", "a..b", "`a", "a.`b"])
def test_bad_column_paths(text):
    with pytest.raises(InvalidInputError, match="invalid column path"):
        parse_column_path(text)


def test_changes_from_json():
    assert change_from_json({"rename_column": {"column": "a", "to": "b"}}) == RenameColumn("a", "b")
    assert change_from_json({"unset_properties": ["k"], "if_exists": True}) == UnsetProperties(("k",), True)
    assert change_from_json({"add_columns": [{"name": "c", "type": "long"}]}) == AddColumns((NewColumn("c", "long"),))
    for bad in (
        {},
        {"rename_column": {"column": "a"}},
        {"drop_columns": "a"},
        {"add_columns": [{"name": "c"}]},
        {"rename_column": {"column": "a", "to": "b"}, "drop_columns": ["a"]},
    ):
        with pytest.raises(InvalidInputError):
            change_from_json(bad)


def test_the_mapping_mode_is_stored_as_delta_spark_spells_it(plain_table):
    with pytest.raises(InvalidInputError, match="must be one of none, name, id"):
        alter_table(plain_table, SetProperties({cm.MODE_KEY: " name"}))
    alter_table(plain_table, SetProperties({cm.MODE_KEY: "Name"}))
    assert plain_table.snapshot().configuration[cm.MODE_KEY] == "name"


def test_turning_mapping_off_is_refused_as_a_mode_change(plain_table):
    alter_table(plain_table, RenameColumn("name", "my label"), enable_column_mapping=True)
    with pytest.raises(UnsupportedFeatureError, match="from name to none"):
        alter_table(plain_table, SetProperties({cm.MODE_KEY: "none"}))


def test_a_new_column_brings_no_mapping_metadata_of_its_own(plain_table, duckdb_delta):
    """Ids and physical names inside a given type are the table's to give:
    a stale physical name would later point readers at a column no file has."""
    nested = {
        "type": "struct",
        "fields": [
            {
                "name": "q",
                "type": "long",
                "nullable": True,
                "metadata": {cm.PHYSICAL_NAME_KEY: "zzz", cm.ID_KEY: 99, "comment": "kept"},
            }
        ],
    }
    alter_table(plain_table, AddColumns((NewColumn("t", nested),)))
    added = plain_table.snapshot().schema["fields"][-1]["type"]["fields"][0]
    assert added["metadata"] == {"comment": "kept"}
    alter_table(plain_table, RenameColumn("t", "t2"), enable_column_mapping=True)
    added = plain_table.snapshot().schema["fields"][-1]["type"]["fields"][0]
    assert added["metadata"][cm.PHYSICAL_NAME_KEY] == "q" and added["metadata"][cm.ID_KEY] != 99


@pytest.mark.parametrize(
    "spec",
    [
        {"alter_column": {"column": "id", "nullable": "false"}},
        {"add_columns": [{"name": "n", "type": "long", "nullable": "false"}]},
        {"unset_properties": ["k"], "if_exists": "yes"},
    ],
)
def test_booleans_must_be_json_booleans(spec):
    with pytest.raises(InvalidInputError, match="true or false"):
        change_from_json(spec)


def test_stats_columns_follow_renames_and_drops(plain_table):
    alter_table(plain_table, SetProperties({"delta.dataSkippingStatsColumns": "id,name,s.x"}))
    alter_table(plain_table, RenameColumn("s", "t"), enable_column_mapping=True)
    alter_table(plain_table, RenameColumn("name", "label"))
    assert plain_table.snapshot().configuration["delta.dataSkippingStatsColumns"] == "id,label,t.x"
    alter_table(plain_table, DropColumns(("label",)))
    assert plain_table.snapshot().configuration["delta.dataSkippingStatsColumns"] == "id,t.x"


def test_a_mode_the_protocol_does_not_support_is_not_honoured(tmp_path):
    """PROTOCOL.md: the property counts only with column mapping in the
    protocol. A reader-1 table that sets it still reads by logical names."""
    log = tmp_path / "odd" / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    metadata = {
        "id": "x",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": [],
        "configuration": {cm.MODE_KEY: "name"},
    }
    (log / f"{0:020d}.json").write_text(
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        + "\n"
        + json.dumps({"metaData": metadata})
        + "\n"
    )
    assert DeltaTable(str(tmp_path / "odd")).snapshot().column_mapping.mode == "none"


def test_constraints_are_found_by_name_whatever_its_case_and_guard_their_columns():
    from airflow_delta_provider.delta.actions.model import Metadata as Md
    from airflow_delta_provider.operations.alter.plan import AddConstraint, DropColumns, DropConstraint, plan

    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
        '{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},'
        '{"name":"y","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}'
    )
    md = Md.new(
        schema, (), {"delta.constraints.MyCheck": "s.x > 0", "delta.columnMapping.mode": "name"}, created_time=0
    )
    with pytest.raises(InvalidInputError, match="already exists"):
        AddConstraint("mycheck", "id > 0").apply(md)
    assert "delta.constraints.MyCheck" not in DropConstraint("MYCHECK").apply(md).configuration
    with pytest.raises(InvalidInputError, match=r"CHECK constraint.*MyCheck read it"):
        plan(md, DropColumns((("s", "x"),)))


def test_a_column_an_invariant_reads_cannot_be_dropped_or_renamed():
    from airflow_delta_provider.delta.actions.model import Metadata as Md
    from airflow_delta_provider.operations.alter.plan import DropColumns, RenameColumn, plan

    def invariant(sql: str) -> str:
        return json.dumps({"expression": {"expression": sql}})

    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "long", "nullable": True, "metadata": {"delta.invariants": invariant("t.ID > 0")}},
        {"name": "other", "type": "long", "nullable": True, "metadata": {"delta.invariants": invariant("not sql (")}},
        {"name": "note", "type": "string", "nullable": True, "metadata": {}},
    ]
    md = Md.new(
        json.dumps({"type": "struct", "fields": fields}), (), {"delta.columnMapping.mode": "name"}, created_time=0
    )
    for change in (DropColumns(("id",)), RenameColumn("id", "key")):
        with pytest.raises(InvalidInputError, match="invariants of amount use it"):
            plan(md, change)
    plan(md, DropColumns(("note",)))  # an unreadable invariant guards nothing
