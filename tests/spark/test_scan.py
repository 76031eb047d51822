"""scan(): rows equal delta-rs's on golden and deltalake-written tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark import scan as scan_module
from airflow_delta_provider.spark.scan import FILE_COLUMN, file_uri, scan

from .conftest import spark_rows, table_rows

GOLDEN = [
    "data-reader-partition-values",
    "data-reader-escaped-chars",
    "basic-with-inserts-updates",
    "data-reader-primitives",
    "data-reader-nested-struct",
    "kernel-timestamp-partition-col-ISO8601",
    "time-travel-schema-changes-b",
    "snapshot-data3",
    "decimal-various-scale-precision",
]


def _norm(v):
    """Spark Rows as dicts; aware UTC datetimes (deltalake) as naive (Spark)."""
    from pyspark.sql import Row

    if isinstance(v, Row):
        return {k: _norm(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if getattr(v, "tzinfo", None) is not None:
        return v.replace(tzinfo=None)
    return v


def _comparable(rows):
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


@pytest.mark.parametrize("name", GOLDEN)
@pytest.mark.parametrize("with_file_path", [False, True])
def test_golden_rows_match_delta_rs(spark, golden_dir, name, with_file_path):
    path = str(golden_dir / name)
    snap = DeltaTable(path).snapshot()
    columns = [f["name"] for f in snap.schema["fields"]]
    df = scan(spark, snap, with_file_path=with_file_path)
    assert df.columns == columns + ([FILE_COLUMN] if with_file_path else [])
    assert _comparable(spark_rows(df, columns)) == _comparable(table_rows(path, columns))


def test_file_column_holds_the_add_path_exactly(spark, golden_dir):
    snap = DeltaTable(str(golden_dir / "data-reader-escaped-chars")).snapshot()
    df = scan(spark, snap, with_file_path=True)
    got = {r[0] for r in df.select(FILE_COLUMN).distinct().collect()}
    assert got == {f.path for f in snap.files}
    assert any("%25" in p for p in got)  # escaped partition folders round-trip


def test_many_partitions_use_the_file_join_and_give_the_same_rows(spark, make_table, monkeypatch):
    data = pa.table({"p": [i % 5 for i in range(50)], "v": list(range(50))})
    path = make_table(data, partition_by=["p"])
    snap = DeltaTable(path).snapshot()
    literal = spark_rows(scan(spark, snap))
    monkeypatch.setattr(scan_module, "MAX_LITERAL_PARTITIONS", 1)
    assert spark_rows(scan(spark, snap)) == literal == table_rows(path)


def test_subset_of_files_and_empty_list(spark, make_table):
    path = make_table(pa.table({"p": ["a", "b"], "v": [1, 2]}), partition_by=["p"])
    snap = DeltaTable(path).snapshot()
    one = [f for f in snap.files if f.partition_values["p"] == "b"]
    assert spark_rows(scan(spark, snap, one), ["p", "v"]) == [("b", 2)]
    empty = scan(spark, snap, [], with_file_path=True)
    assert empty.count() == 0 and empty.columns == ["p", "v", FILE_COLUMN]


def test_column_missing_from_older_files_reads_as_null(spark, make_table):
    from deltalake import write_deltalake

    path = make_table(pa.table({"a": [1]}))
    write_deltalake(path, pa.table({"a": [2], "b": ["x"]}), mode="append", schema_mode="merge")
    rows = spark_rows(scan(spark, DeltaTable(path).snapshot()))
    assert rows == [(1, None), (2, "x")]


def test_file_uri_matches_spark_metadata_path(spark, tmp_path):
    import pyarrow.parquet as pq

    folder = tmp_path / "a b%20c" / "x=1%3A#é+@,;$&'()"
    folder.mkdir(parents=True)
    target = folder / "f 1.parquet"
    pq.write_table(pa.table({"a": [1]}), str(target))
    got = spark.read.parquet(str(target)).select("_metadata.file_path").first()[0]
    assert got == file_uri(str(target))
