"""Type widening in the Spark engine: scans of tables delta-spark widened,
APPEND with ``merge_schema`` widening columns (flat, nested, under column
mapping, on a preview table), UPDATE and DELETE afterwards, and refusals
that leave the table untouched; in both I/O modes.

DuckDB (delta-kernel-rs) is the oracle: it reads ``typeWidening`` and
``typeWidening-preview`` tables. delta-rs (1.6) refuses both features, so it
can only vouch for the versions before a widening.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.errors import SchemaMismatchError
from airflow_delta_provider.delta.schema.widening import TYPE_CHANGES_KEY
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping as cm
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.update import run_update
from airflow_delta_provider.spark.read.scan import scan

from .arrow_support import arrow_workers  # noqa: F401 - the fixture
from .commands.dml_support import _sorted, commit_actions, rows_duckdb, state

pytestmark = pytest.mark.usefixtures("arrow_workers")

IO_MODES = ["hadoop", "arrow"]
WIDEN = {"delta.enableTypeWidening": "true"}

#: Before: every narrow type mergeSchema can widen, and an integer partition column.
NARROW = pa.table(
    {
        "p": pa.array([1, 2], pa.int32()),
        "i": pa.array([1, 2], pa.int32()),
        "f": pa.array([0.7, None], pa.float32()),
        "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2)]),
        "m": pa.array([Decimal("1.25"), Decimal("-3.50")], pa.decimal128(10, 2)),
    }
)
#: After: each column one wider type (the decimal gains two digits, both of scale).
WIDE = pa.table(
    {
        "p": pa.array([2**40], pa.int64()),
        "i": pa.array([2**40 + 1], pa.int64()),
        "f": pa.array([0.1], pa.float64()),
        "d": pa.array([dt.datetime(2024, 1, 3, 4, 5, 6, 7)], pa.timestamp("us")),
        "m": pa.array([Decimal("12.3456")], pa.decimal128(12, 4)),
    }
)
#: Every row once widened, as all readers must return it.
WIDENED_ROWS = _sorted(
    pa.table(
        {
            "p": pa.array([1, 2, 2**40], pa.int64()),
            "i": pa.array([1, 2, 2**40 + 1], pa.int64()),
            "f": pa.array([float(pa.scalar(0.7, pa.float32()).as_py()), None, 0.1], pa.float64()),
            "d": pa.array([dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 3, 4, 5, 6, 7)]),
            "m": pa.array([Decimal("1.2500"), Decimal("-3.5000"), Decimal("12.3456")], pa.decimal128(12, 4)),
        }
    )
)
WIDE_TYPES = {"p": pa.int64(), "i": pa.int64(), "f": pa.float64(), "d": pa.timestamp("us"), "m": pa.decimal128(12, 4)}


def _source(tmp_path, table: pa.Table, name: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    return str(folder)


def _duckdb_arrow(con, path: str) -> pa.Table:
    return con.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()


def _ours(spark, path: str, io: str) -> pa.Table:
    return scan(spark, DeltaTable(path).snapshot(), io=io).toArrow()


def _type_changes(path: str, version: int) -> dict[str, list]:
    """Column -> its ``delta.typeChanges`` in the metaData of one commit."""
    (md,) = [a["metaData"] for a in commit_actions(path, version) if "metaData" in a]
    return {f["name"]: f["metadata"].get(TYPE_CHANGES_KEY) for f in json.loads(md["schemaString"])["fields"]}


def _assert_delta_rs_refuses(path: str) -> None:
    """delta-rs does not read the feature: it refuses, never narrows."""
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    with pytest.raises(Exception, match="TypeWidening"):
        QueryBuilder().register("t", RsTable(path)).execute("SELECT * FROM t").read_all()


# --- Tables delta-spark widened -----------------------------------------------------------


@pytest.mark.parametrize("name", ["type-widening", "type-widening-nested"])
@pytest.mark.parametrize("io", IO_MODES)
def test_golden_widened_tables_scan_like_duckdb(spark, golden_dir, duckdb_delta, name, io):
    """The file written before the change comes back in the table's types."""
    path = str(golden_dir / name)
    got, expected = _ours(spark, path, io), _duckdb_arrow(duckdb_delta, path)
    assert _sorted(got) == _sorted(expected)
    snap = DeltaTable(path).snapshot()
    types = {f["name"]: f["type"] for f in snap.schema["fields"]}
    if name == "type-widening":
        assert got.schema.field("byte_decimal").type == pa.decimal128(11, 1) == expected.schema.field("byte_decimal").type
        assert got.schema.field("date_timestamp_ntz").type == pa.timestamp("us")
        assert types["decimal_decimal_greater_scale"] == "decimal(20,5)"
        assert Decimal("67.89000") in got.column("decimal_decimal_greater_scale").to_pylist()
    else:
        assert got.schema.field("map").type.key_type == pa.int64()
        assert got.schema.field("array").type.value_type == pa.int64()


# --- Widening with merge_schema ------------------------------------------------------------


@pytest.mark.parametrize("io", IO_MODES)
def test_merge_schema_widens_and_every_reader_sees_the_wide_types(spark, tmp_path, duckdb_delta, io):
    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, NARROW, "narrow"), partition_by=["p"], io=io, table_properties=WIDEN)
    assert DeltaTable(path).snapshot().protocol == Protocol(
        3, 7, ("typeWidening",), ("appendOnly", "invariants", "typeWidening")
    )
    result = run_append(spark, path, _source(tmp_path, WIDE, "wide"), merge_schema=True, io=io)
    assert result.version == 1

    assert _type_changes(path, 1) == {
        "p": [{"fromType": "integer", "toType": "long"}],
        "i": [{"fromType": "integer", "toType": "long"}],
        "f": [{"fromType": "float", "toType": "double"}],
        "d": [{"fromType": "date", "toType": "timestamp_ntz"}],
        "m": [{"fromType": "decimal(10,2)", "toType": "decimal(12,4)"}],
    }
    # timestamp_ntz arrives with the widened column.
    assert DeltaTable(path).snapshot().protocol == Protocol(
        3, 7, ("timestampNtz", "typeWidening"), ("appendOnly", "invariants", "timestampNtz", "typeWidening")
    )
    for engine, got in (("ours", _ours(spark, path, io)), ("duckdb", _duckdb_arrow(duckdb_delta, path))):
        assert {n: got.schema.field(n).type for n in WIDE_TYPES} == WIDE_TYPES, engine
        assert _sorted(got) == WIDENED_ROWS, engine
    _assert_delta_rs_refuses(path)

    # A widened file of the first version is skipped or kept by its old stats.
    snap = DeltaTable(path).snapshot()
    assert len(snap.files_matching("d = '2024-01-01 00:00:00'")) == 1
    assert len(snap.files_matching("i > 3")) == 1

    # UPDATE and DELETE read old and new files as the wide types and rewrite them so.
    run_update(spark, path, "i < 3", {"i": "i + 4294967296", "m": "m * 2"}, io=io)
    run_delete(spark, path, "d >= '2024-01-03'", io=io)
    expected = _sorted(
        pa.table(
            {
                "p": pa.array([1, 2], pa.int64()),
                "i": pa.array([4294967297, 4294967298], pa.int64()),
                "f": pa.array([float(pa.scalar(0.7, pa.float32()).as_py()), None], pa.float64()),
                "d": pa.array([dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)]),
                "m": pa.array([Decimal("2.5000"), Decimal("-7.0000")], pa.decimal128(12, 4)),
            }
        )
    )
    assert _sorted(_ours(spark, path, io)) == rows_duckdb(duckdb_delta, path) == expected


@pytest.mark.parametrize("io", IO_MODES)
def test_nested_fields_widen_with_their_paths_recorded(spark, tmp_path, duckdb_delta, io):
    point = pa.struct([("x", pa.int16())])
    narrow = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "s": pa.array([{"x": 1}], point),
            "a": pa.array([[1, 2]], pa.list_(pa.int32())),
            "m": pa.array([[("k", 1.5)]], pa.map_(pa.string(), pa.float32())),
        }
    )
    wide = pa.table(
        {
            "id": pa.array([2], pa.int64()),
            "s": pa.array([{"x": 70000}], pa.struct([("x", pa.int32())])),
            "a": pa.array([[2**40]], pa.list_(pa.int64())),
            "m": pa.array([[("k", 0.1)]], pa.map_(pa.string(), pa.float64())),
        }
    )
    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, narrow, "narrow"), io=io, table_properties=WIDEN)
    run_append(spark, path, _source(tmp_path, wide, "wide"), merge_schema=True, io=io)
    schema = DeltaTable(path).snapshot().schema
    s, a, m = schema["fields"][1:]
    assert s["metadata"] == {} and s["type"]["fields"][0]["metadata"][TYPE_CHANGES_KEY] == [
        {"fromType": "short", "toType": "integer"}
    ]
    assert a["metadata"][TYPE_CHANGES_KEY] == [{"fromType": "integer", "toType": "long", "fieldPath": "element"}]
    assert m["metadata"][TYPE_CHANGES_KEY] == [{"fromType": "float", "toType": "double", "fieldPath": "value"}]
    ours = _ours(spark, path, io)
    assert ours.schema.field("a").type.value_type == pa.int64()
    assert ours.schema.field("m").type.item_type == pa.float64()
    assert _sorted(ours) == rows_duckdb(duckdb_delta, path)
    assert {r["id"]: r["s"]["x"] for r in ours.to_pylist()} == {1: 1, 2: 70000}


@pytest.mark.parametrize("io", IO_MODES)
def test_widening_under_column_mapping(spark, tmp_path, duckdb_delta, io):
    """Files hold physical names; a widened mapped column reads as its
    logical name in the wide type, and keeps its id and physical name."""
    narrow = pa.table({"my id": pa.array([1, 2], pa.int32()), "when": pa.array([dt.date(2024, 5, 6), None])})
    wide = pa.table({"my id": pa.array([2**33], pa.int64()), "when": pa.array([dt.datetime(2024, 5, 7, 8)])})
    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, narrow, "narrow"), io=io, table_properties={cm.MODE_KEY: "name", **WIDEN})
    before = {f["name"]: dict(f["metadata"]) for f in DeltaTable(path).snapshot().schema["fields"]}
    run_append(spark, path, _source(tmp_path, wide, "wide"), merge_schema=True, io=io)
    snap = DeltaTable(path).snapshot()
    for f in snap.schema["fields"]:
        assert f["metadata"] == {**before[f["name"]], TYPE_CHANGES_KEY: f["metadata"][TYPE_CHANGES_KEY]}
    assert [f["type"] for f in snap.schema["fields"]] == ["long", "timestamp_ntz"]
    expected = [(1, "2024-05-06 00:00:00"), (2, None), (2**33, "2024-05-07 08:00:00")]
    assert _sorted(_ours(spark, path, io)) == rows_duckdb(duckdb_delta, path) == sorted(expected, key=repr)
    assert snap.files_matching("`my id` > 2") == [f for f in snap.files if f.num_records == 1]


def test_widening_a_table_delta_spark_made_in_preview(spark, golden_copy, tmp_path, duckdb_delta):
    """type-widening (``typeWidening-preview``): our widening keeps the
    preview feature and dates its change with ``tableVersion``, as
    delta-spark 3.2 does; the earlier entries keep theirs."""
    path = golden_copy("type-widening")
    src = _source(tmp_path, pa.table({"decimal_decimal_same_scale": pa.array([Decimal("1.5")], pa.decimal128(22, 2))}), "src")
    assert run_append(spark, path, src, merge_schema=True).version == 3
    snap = DeltaTable(path).snapshot()
    assert "typeWidening" not in snap.protocol.reader_features
    assert _type_changes(path, 3)["decimal_decimal_same_scale"] == [
        {"toType": "decimal(20,2)", "fromType": "decimal(10,2)", "tableVersion": 2},
        {"tableVersion": 3, "fromType": "decimal(20,2)", "toType": "decimal(22,2)"},
    ]
    got = _ours(spark, path, "hadoop")
    assert got.schema.field("decimal_decimal_same_scale").type == pa.decimal128(22, 2)
    assert _sorted(got) == rows_duckdb(duckdb_delta, path)
    assert got.num_rows == 3


# --- Refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "partition_by", "wide", "says"),
    [
        pytest.param({}, [], {"i": pa.array([5], pa.int64())},
                     "column i: cannot widen integer in the table to long in the data", id="property-off"),
        pytest.param(WIDEN, [], {"i": pa.array([5.5], pa.float64())},
                     "never turns an integer column into double", id="integer-to-double"),
        pytest.param(WIDEN, [], {"i": pa.array(["x"])}, "cannot merge type string in the data into integer", id="string"),
        pytest.param(WIDEN, ["d"], {"d": pa.array([dt.datetime(2024, 1, 3)], pa.timestamp("us"))},
                     "cannot widen partition column d from date to timestamp_ntz", id="date-partition"),
    ],
)
@pytest.mark.parametrize("io", IO_MODES)
def test_a_refused_widening_writes_nothing(spark, tmp_path, properties, partition_by, wide, says, io):
    narrow = pa.table({"i": pa.array([1], pa.int32()), "d": pa.array([dt.date(2024, 1, 1)])})
    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, narrow, "narrow"), partition_by=partition_by, io=io,
               table_properties=properties)
    before = state(path)
    with pytest.raises(SchemaMismatchError, match=says) as err:
        run_append(spark, path, _source(tmp_path, pa.table(wide), "wide"), merge_schema=True, io=io)
    if not properties:
        assert "delta.enableTypeWidening=true" in str(err.value)
    assert state(path) == before
