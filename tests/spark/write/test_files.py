"""write_files(): Delta-style files that delta-rs and DuckDB read back."""

from __future__ import annotations

import datetime as dt
import json
import os
import re

import pytest
from pyspark.sql import Row

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvariantViolationError
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.write.files import STAGING_PREFIX, write_files
from tests.spark.conftest import disk_files, table_rows

NAME = re.compile(r"^part-\d{5}-[0-9a-f-]{36}\.c000\.snappy\.parquet$")


def _schema(*fields):
    return {"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": nullable, "metadata": md} for n, t, nullable, md in fields
    ]}


def _commit(path, schema, partition_columns, adds):
    txn = DeltaTable(path).transaction("WRITE", {"mode": "Append"}, None)
    txn.update_metadata(Metadata.new(schema_string(schema), partition_columns, created_time=0))
    txn.add_all(adds)
    return txn.commit()


def test_partitioned_write_is_read_back_by_delta_rs_and_duckdb(spark, tmp_path, duckdb_delta):
    schema = _schema(("id", "long", True, {}), ("ts", "timestamp", True, {}), ("p", "string", True, {}))
    ts = dt.datetime(2021, 9, 8, 11, 11, 11, 123456)
    df = spark.createDataFrame(
        [Row(p="a/b %", ts=ts, id=1), Row(p=None, ts=None, id=2), Row(p="x=y", ts=ts, id=3)],
        "p string, ts timestamp, id long",
    )
    path = str(tmp_path / "t")
    os.makedirs(path)
    adds = write_files(df, path, schema, ["p"])
    _commit(path, schema, ["p"], adds)

    assert all(NAME.match(a.path.rsplit("/", 1)[1]) for a in adds)
    assert {a.partition_values["p"] for a in adds} == {"a/b %", None, "x=y"}
    assert not any(n.startswith(STAGING_PREFIX) for n in os.listdir(path))
    for a in adds:
        stats = json.loads(a.stats)
        assert stats["numRecords"] == 1 and "p" not in stats["nullCount"]
    expected = [(1, ts, "a/b %"), (2, None, None), (3, ts, "x=y")]
    got = [(r[0], r[1].replace(tzinfo=None) if r[1] else None, r[2]) for r in table_rows(path)]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    duck = duckdb_delta.execute(f"SELECT id, p FROM delta_scan('{path}') ORDER BY id").fetchall()
    assert duck == [(1, "a/b %"), (2, None), (3, "x=y")]


def test_files_hold_data_columns_only_with_int64_micros(spark, tmp_path):
    import pyarrow.parquet as pq

    schema = _schema(("ts", "timestamp", True, {}), ("p", "integer", True, {}))
    df = spark.createDataFrame([(dt.datetime(2020, 1, 1), 1)], "ts timestamp, p int")
    path = str(tmp_path / "t")
    os.makedirs(path)
    (add,) = write_files(df, path, schema, ["p"])
    meta = pq.ParquetFile(os.path.join(path, add.path)).metadata
    assert meta.schema.names == ["ts"]
    assert meta.row_group(0).column(0).physical_type == "INT64"
    assert add.path.startswith("p=1/")


def test_frame_is_conformed_to_the_table_schema(spark, tmp_path):
    schema = _schema(("a", "long", True, {}), ("b", "string", True, {}), ("c", "integer", True, {}))
    df = spark.createDataFrame([(5, 1)], "C int, A int")  # other order and case, b missing
    path = str(tmp_path / "t")
    os.makedirs(path)
    adds = write_files(df, path, schema, [])
    _commit(path, schema, [], adds)
    assert table_rows(path, ["a", "b", "c"]) == [(1, None, 5)]


@pytest.mark.parametrize(
    "field, rows",
    [
        (("v", "integer", False, {}), [(1,), (None,)]),
        (("v", "integer", True, {"delta.invariants": json.dumps({"expression": {"expression": "v > 0"}})}), [(1,), (-1,)]),
    ],
    ids=["not-null", "invariant"],
)
def test_constraint_violation_fails_and_leaves_no_files(spark, tmp_path, field, rows):
    schema = _schema(field)
    path = str(tmp_path / "t")
    os.makedirs(path)
    df = spark.createDataFrame(rows, "v int")
    with pytest.raises(InvariantViolationError, match="v"):
        write_files(df, path, schema, [])
    assert disk_files(path) == set()
