"""Column mapping in the Spark engine: scans, APPEND (create, merge_schema,
overwrite), UPDATE, DELETE (also with deletion vectors), in both I/O modes,
on tables we create and on tables delta-spark wrote; read back by delta-rs's
DataFusion reader and DuckDB (delta-kernel-rs), which both map columns.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError, UnsupportedFeatureError
from airflow_delta_provider.delta.operations.alter import (
    AddColumns,
    DropColumns,
    NewColumn,
    RenameColumn,
    alter_table,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping as cm
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.update import run_update
from airflow_delta_provider.spark.read.scan import scan

from .arrow_support import arrow_workers  # noqa: F401 - the fixture
from .commands.dml_support import _sorted, rows_duckdb, state

pytestmark = pytest.mark.usefixtures("arrow_workers")

IO_MODES = ["hadoop", "arrow"]
GOLDEN_MAPPED = [
    "table-with-columnmapping-mode-id",
    "table-with-columnmapping-mode-name",
    "data-skipping-basic-stats-all-types-columnmapping-id",
    "data-skipping-basic-stats-all-types-columnmapping-name",
    "dv-with-columnmapping",
]

#: The partition column comes first: DuckDB's delta extension (1.4) reads a
#: mapped table's partition column as null when it is not the first column
#: (delta-spark's golden tables have it first). delta-rs reads both right.
SOURCE = pa.table(
    {
        "part": pa.array(["p", "p", "q", "q"]),
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "my col": pa.array(["a", "b", "a", None]),
        "s": pa.array([{"x": i} for i in range(4)], pa.struct([("x", pa.int32())])),
    }
)


def rows_datafusion(path: str) -> list[tuple]:
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    return _sorted(pa.table(QueryBuilder().register("t", RsTable(path)).execute("SELECT * FROM t").read_all()))


def ours(spark, path: str, io: str = "hadoop") -> list[tuple]:
    return _sorted(scan(spark, DeltaTable(path).snapshot(), io=io).toArrow())


def parquet_names(path: str) -> set[str]:
    """The top-level column names of every data file of the table."""
    names = set()
    for f in DeltaTable(path).snapshot().files:
        names.update(pq.ParquetFile(os.path.join(path, f.path.replace("%20", " "))).schema_arrow.names)
    return names


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "source.parquet"
    pq.write_table(SOURCE, path)
    return str(path)


@pytest.mark.parametrize("name", GOLDEN_MAPPED)
@pytest.mark.parametrize("io", IO_MODES)
def test_golden_mapped_tables_scan_like_duckdb(spark, golden_dir, duckdb_delta, name, io):
    path = str(golden_dir / name)
    assert ours(spark, path, io) == rows_duckdb(duckdb_delta, path)


@pytest.mark.parametrize("mode", ["name", "id"])
@pytest.mark.parametrize("io", IO_MODES)
def test_a_new_mapped_table_is_written_with_physical_names(spark, tmp_path, source, duckdb_delta, mode, io):
    path = str(tmp_path / "t")
    run_append(spark, path, source, partition_by=["part"], io=io, table_properties={cm.MODE_KEY: mode})
    snap = DeltaTable(path).snapshot()
    assert snap.protocol == Protocol(2, 5)
    physical = {f["name"]: f["metadata"][cm.PHYSICAL_NAME_KEY] for f in snap.schema["fields"]}
    assert all(p.startswith("col-") for p in physical.values())
    assert snap.configuration[cm.MAX_ID_KEY] == "5"  # four columns and s.x
    # Files, stats and partition values use physical names only.
    assert parquet_names(path) == {physical["id"], physical["my col"], physical["s"]}
    for f in snap.files:
        assert set(f.partition_values) == {physical["part"]}
        assert set(json.loads(f.stats)["minValues"]) <= {physical["id"], physical["my col"], physical["s"]}
    # Field ids are written in both modes, as the protocol and delta-spark do.
    ids = pq.ParquetFile(os.path.join(path, snap.files[0].path)).schema_arrow.field(physical["id"]).metadata
    assert ids[b"PARQUET:field_id"] == b"2"
    expected = rows_duckdb(duckdb_delta, path)
    assert expected == _sorted(SOURCE) == rows_datafusion(path) == ours(spark, path, io)
    # Stats keyed by physical names still prune by logical names.
    assert len(snap.files_matching("id > 100")) == 0 and len(snap.files_matching("part = 'q'")) == 1


@pytest.mark.parametrize("io", IO_MODES)
def test_update_delete_and_merge_schema_on_a_mapped_table(spark, tmp_path, source, duckdb_delta, io):
    path = str(tmp_path / "t")
    run_append(spark, path, source, partition_by=["part"], io=io, table_properties={cm.MODE_KEY: "name"})
    run_update(spark, path, "`my col` = 'a' AND s.x > 0", {"s": "named_struct('x', s.x + 10)", "id": "id * 10"}, io=io)
    run_delete(spark, path, "part = 'p' AND id = 2", io=io)

    wider = tmp_path / "wider.parquet"
    pq.write_table(pa.table({"id": pa.array([9], pa.int64()), "extra": ["e"], "part": ["q"]}), wider)
    run_append(spark, path, str(wider), merge_schema=True, io=io)
    snap = DeltaTable(path).snapshot()
    extra = snap.schema["fields"][-1]
    assert extra["name"] == "extra" and extra["metadata"][cm.ID_KEY] == 6
    assert snap.configuration[cm.MAX_ID_KEY] == "6"

    expected = [
        (None, 1, "a", "p", (("x", 0),)),
        (None, 30, "a", "q", (("x", 12),)),
        (None, 4, None, "q", (("x", 3),)),
        ("e", 9, None, "q", None),
    ]
    assert rows_duckdb(duckdb_delta, path) == rows_datafusion(path) == ours(spark, path, io) == sorted(expected, key=repr)


@pytest.mark.parametrize("io", IO_MODES)
def test_rename_and_drop_then_write_again(spark, tmp_path, source, duckdb_delta, io):
    """After a rename the old files and the new ones read as one column; a
    dropped column's data never comes back, even under a reused name."""
    path = str(tmp_path / "t")
    plain = tmp_path / "plain.parquet"
    pq.write_table(SOURCE.rename_columns(["part", "id", "my_col", "s"]), plain)  # no mapping: no space
    run_append(spark, path, str(plain), partition_by=["part"], io=io)
    table = DeltaTable(path)
    alter_table(table, RenameColumn("my_col", "label"), enable_column_mapping=True)
    alter_table(table, RenameColumn("part", "region"))
    alter_table(table, DropColumns(("s",)))
    alter_table(table, AddColumns((NewColumn("s", "string"),)))
    run_update(spark, path, "label = 'a' AND region = 'q'", {"label": "'A'", "s": "'new'"}, io=io)

    more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array([5], pa.int64()), "label": ["z"], "region": ["r"]}), more)
    run_append(spark, path, str(more), io=io)
    assert DeltaTable(path).snapshot().partition_columns == ["region"]
    expected = sorted(
        [(1, "a", "p", None), (2, "b", "p", None), (3, "A", "q", "new"), (4, None, "q", None), (5, "z", "r", None)],
        key=repr,
    )
    got = _sorted(scan(spark, DeltaTable(path).snapshot(), io=io).select("id", "label", "region", "s").toArrow())
    assert got == expected
    assert rows_duckdb(duckdb_delta, path) == rows_datafusion(path) == ours(spark, path, io)
    before = state(path)
    with pytest.raises(InvalidInputError, match="my_col"):  # the old name is gone
        run_delete(spark, path, "my_col = 'a'", io=io)
    assert state(path) == before


def test_deletion_vectors_on_a_mapped_table_delta_spark_wrote(spark, golden_copy, duckdb_delta):
    path = golden_copy("dv-with-columnmapping")
    before = ours(spark, path)
    result = run_delete(spark, path, "col1 >= 40")
    assert result.metrics["numDeletedRows"] > 0
    after = ours(spark, path)
    assert after == rows_duckdb(duckdb_delta, path) == rows_datafusion(path)
    assert len(after) == len(before) - result.metrics["numDeletedRows"]


@pytest.mark.parametrize("name", ["table-with-columnmapping-mode-id", "table-with-columnmapping-mode-name"])
def test_append_to_a_mapped_table_delta_spark_wrote(spark, golden_copy, duckdb_delta, tmp_path, name):
    path = golden_copy(name)
    before = scan(spark, DeltaTable(path).snapshot()).count()
    src = str(tmp_path / "src")
    scan(spark, DeltaTable(path).snapshot()).limit(2).write.parquet(src)
    run_append(spark, path, src)
    by_duckdb = duckdb_delta.execute(f"SELECT count(*), count(DISTINCT ByteType) FROM delta_scan('{path}')").fetchone()
    assert scan(spark, DeltaTable(path).snapshot()).count() == before + 2 == by_duckdb[0]
    assert parquet_names(path) == {f["metadata"][cm.PHYSICAL_NAME_KEY] for f in DeltaTable(path).snapshot().schema["fields"]}


def test_a_mapped_source_brings_no_ids_into_another_table(spark, tmp_path, golden_dir):
    """A Delta source read from a mapped table carries its ids in the frame's
    metadata; a new table must not inherit them."""
    path = str(tmp_path / "copy")
    run_append(spark, path, str(golden_dir / "table-with-columnmapping-mode-name"), format="delta")
    snap = DeltaTable(path).snapshot()
    assert snap.column_mapping.mode == "none"
    assert not any(k.startswith("delta.columnMapping") for f in snap.schema["fields"] for k in f["metadata"])


def test_merge_schema_cannot_smuggle_a_clashing_name(spark, tmp_path, source):
    path = str(tmp_path / "t")
    run_append(spark, path, source, table_properties={cm.MODE_KEY: "name"})
    clash = tmp_path / "clash.parquet"
    pq.write_table(pa.table({"ID": pa.array(["x"])}), clash)
    before = state(path)
    with pytest.raises(SchemaMismatchError):
        run_append(spark, path, str(clash), merge_schema=True)
    assert state(path) == before


@pytest.mark.parametrize("name", ["table-with-columnmapping-mode-id", "table-with-columnmapping-mode-name"])
def test_every_change_on_a_copy_of_a_mapped_table_delta_spark_wrote(spark, golden_copy, duckdb_delta, tmp_path, name):
    """UPDATE, DELETE, APPEND with a new nested field, RENAME, DROP and a
    checkpoint, one after the other; then both oracles read the logical
    schema and the rows we expect."""
    from pyspark.sql import functions as F

    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    path = golden_copy(name)
    table = DeltaTable(path)
    key = ["ByteType", "IntegerType", "LongType"]
    before = [tuple(r) for r in scan(spark, table.snapshot()).select(*key, "StringType").collect()]
    assert len(before) == 6 and (None, None, None, None) in before  # rows 0 to 4 and one of nulls

    run_update(spark, path, "LongType >= 3", {"IntegerType": "IntegerType + 100"})
    run_delete(spark, path, "ByteType = 0")
    src = str(tmp_path / "nested")
    one = scan(spark, table.snapshot()).filter("LongType = 1")
    one.withColumn(
        "nested_struct", F.struct("nested_struct.aa", "nested_struct.ac", F.lit("new").alias("ad"))
    ).withColumn("LongType", F.lit(100).cast("long")).write.parquet(src)
    run_append(spark, path, src, merge_schema=True)
    alter_table(table, RenameColumn("StringType", "label"))
    alter_table(table, DropColumns(("BinaryType",)))
    write_checkpoint(table, table.snapshot())

    snap = table.snapshot()
    assert (Path(path) / "_delta_log" / f"{snap.version:020d}.checkpoint.parquet").is_file()
    names = [f["name"] for f in snap.schema["fields"]]
    assert "label" in names and "StringType" not in names and "BinaryType" not in names
    nested = next(f for f in snap.schema["fields"] if f["name"] == "nested_struct")
    assert [f["name"] for f in nested["type"]["fields"]] == ["aa", "ac", "ad"]
    assert nested["type"]["fields"][-1]["metadata"][cm.ID_KEY] == int(snap.configuration[cm.MAX_ID_KEY])

    expected = [
        (b, i + 100 if lng is not None and lng >= 3 else i, lng, s, None) for b, i, lng, s in before if b != 0
    ] + [next((b, i, 100, s, "new") for b, i, lng, s in before if lng == 1)]
    expected = sorted(expected, key=repr)
    sql = 'SELECT "ByteType", "IntegerType", "LongType", label, nested_struct.ad FROM {}'
    ours_rows = sorted(
        (tuple(r) for r in scan(spark, snap).select(*key, "label", "nested_struct.ad").collect()), key=repr
    )
    by_duckdb = sorted(duckdb_delta.execute(sql.format(f"delta_scan('{path}')")).fetchall(), key=repr)
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    rs = pa.table(QueryBuilder().register("t", RsTable(path)).execute(sql.format("t")).read_all())
    by_rs = sorted((tuple(r.values()) for r in rs.to_pylist()), key=repr)
    assert ours_rows == by_duckdb == by_rs == expected


def _renamed_keeping_ids(table: pa.Table) -> pa.Table:
    """``table`` with every field, nested ones too, renamed ``other_<n>``
    and its parquet field id kept: what a file converted from Iceberg after
    renames looks like."""
    counter = iter(range(1000))

    def rename(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([t.field(i).with_name(f"other_{next(counter)}").with_type(rename(t.field(i).type))
                              for i in range(t.num_fields)])
        return t

    fields = [f.with_name(f"other_{next(counter)}").with_type(rename(f.type)) for f in table.schema]
    columns = [pa.chunked_array([c.view(f.type) for c in col.chunks], type=f.type) for col, f in zip(table.columns, fields)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


@pytest.mark.parametrize("io", IO_MODES)
def test_id_mode_matches_columns_by_field_id_not_by_name(spark, tmp_path, source, io):
    """In ``id`` mode a file's column names need not be the physical names:
    both readers match by field id, and a rewrite keeps every value."""
    path = str(tmp_path / "t")
    run_append(spark, path, source, io="hadoop", table_properties={cm.MODE_KEY: "id"})
    table = DeltaTable(path)
    snap = table.snapshot()
    expected = ours(spark, path)
    (old,) = snap.files
    data = pq.read_table(os.path.join(path, old.path))
    renamed = _renamed_keeping_ids(data)
    assert renamed.schema.field(1).metadata[b"PARQUET:field_id"] == data.schema.field(1).metadata[b"PARQUET:field_id"]
    new_path = "renamed.parquet"
    pq.write_table(renamed, os.path.join(path, new_path))
    txn = table.transaction("WRITE", {}, snap)
    txn.add_all([old.remove(0), replace(old, path=new_path, size=os.path.getsize(os.path.join(path, new_path)), stats=None)])
    txn.commit()

    assert ours(spark, path, "hadoop") == ours(spark, path, "arrow") == expected
    run_update(spark, path, "id = 1", {"my col": "'z'"}, io=io)
    got = ours(spark, path, io)  # columns by name: id, my col, part, s
    assert [r[0] for r in got] == [1, 2, 3, 4]  # every id survives the rewrite
    assert [r[1] for r in got] == ["z", "b", "a", None]


def test_turning_mapping_off_through_append_writes_nothing(spark, tmp_path, source):
    path = str(tmp_path / "t")
    run_append(spark, path, source, table_properties={cm.MODE_KEY: "name"})
    before = state(path)
    with pytest.raises(UnsupportedFeatureError, match="from name to none"):
        run_append(spark, path, source, table_properties={cm.MODE_KEY: "none"})
    assert state(path) == before
