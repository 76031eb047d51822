"""scan(): rows equal delta-rs's on golden and deltalake-written tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import to_absolute
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.read import files as files_module
from airflow_delta_provider.spark.read import scan as scan_module
from airflow_delta_provider.spark.read.file_reads import literal_reads, partition_groups, read_files
from airflow_delta_provider.spark.read.files import URI_COLUMN, file_uri, xxhash64
from airflow_delta_provider.spark.read.scan import FILE_COLUMN, count_matches, scan
from tests.spark.commands.dml_support import (
    SHADOWING_KINDS,
    SHADOWING_LAYOUTS,
    shadowing_condition,
    shadowing_table_in_layout,
)
from tests.spark.conftest import spark_rows, table_rows

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


def test_read_of_many_local_files_starts_no_spark_job(spark, tmp_path):
    """Spark lists 32+ paths with a job of its own; read_files stats them in
    the driver instead, and leaves the session setting as it found it."""
    import pyarrow.parquet as pq
    from pyspark.sql.types import LongType, StructField, StructType

    paths = []
    for i in range(40):
        target = tmp_path / f"f{i}.parquet"
        pq.write_table(pa.table({"a": [i]}), str(target))
        paths.append(str(target))
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key, None)
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("read-files-listing", "listing")
    try:
        frame = read_files(spark, StructType([StructField("a", LongType())]), paths)
        jobs = tracker.getJobIdsForGroup("read-files-listing")
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert jobs == []
    assert spark.conf.get(key, None) == before
    assert sorted(r.a for r in frame.collect()) == list(range(40))


# --- count_matches: the touched-file scan of UPDATE and DELETE ---------------------------


def _expected_counts(snap, keep) -> dict[str, int]:
    """Per-file counts of rows for which ``keep(row)`` holds, read file by
    file with pyarrow (partition values from the log, as strings)."""
    import pyarrow.parquet as pq

    out = {}
    for f in snap.files:
        rows = pq.read_table(to_absolute(snap.table_root, f.path)).to_pylist()
        n = sum(1 for r in rows if keep({**r, **f.partition_values}))
        if n:
            out[f.path] = n
    return out


@pytest.fixture
def partitioned(make_table):
    data = pa.table({"p": [i % 6 for i in range(120)], "v": list(range(120)), "s": [None, "x", "y"] * 40})
    path = make_table(data, partition_by=["p"])
    for _ in range(2):  # several files per partition
        make_table(data.slice(0, 30), mode="append", partition_by=["p"])
    return DeltaTable(path).snapshot()


CONDITIONS = [
    ("v % 7 = 0", lambda r: r["v"] % 7 == 0),
    ("s = 'x' AND v > 50", lambda r: r["s"] == "x" and r["v"] > 50),  # NULL s: not matched
    ("p = 2 OR v < 3", lambda r: r["p"] == "2" or r["v"] < 3),  # a partition column
    ("v < 0", lambda r: False),
]


@pytest.mark.parametrize("many_partitions", [False, True], ids=["literal-reads", "many-partitions"])
@pytest.mark.parametrize("sql,keep", CONDITIONS, ids=[c[0] for c in CONDITIONS])
def test_count_matches_counts_per_file_exactly(spark, partitioned, monkeypatch, many_partitions, sql, keep):
    from pyspark.sql import functions as F

    if many_partitions:
        monkeypatch.setattr(scan_module, "MAX_LITERAL_PARTITIONS", 1)
    got = count_matches(spark, partitioned, partitioned.files, F.expr(sql))
    assert got == _expected_counts(partitioned, keep)


def test_count_matches_without_condition_counts_every_row(spark, partitioned):
    some = partitioned.files[:3]
    got = count_matches(spark, partitioned, some, None)
    assert got == {f.path: f.num_records for f in some}
    assert count_matches(spark, partitioned, [], None) == {}


def test_count_matches_maps_odd_file_names_to_their_add_path(spark, golden_dir):
    snap = DeltaTable(str(golden_dir / "data-reader-escaped-chars")).snapshot()
    got = count_matches(spark, snap, snap.files, None)
    assert set(got) == {f.path for f in snap.files}
    assert sum(got.values()) == len(table_rows(str(golden_dir / "data-reader-escaped-chars")))


def test_count_matches_stays_exact_when_file_keys_collide(spark, partitioned, monkeypatch):
    from pyspark.sql import functions as F

    monkeypatch.setattr(files_module, "xxhash64", lambda text: 7)  # every file, one key
    got = count_matches(spark, partitioned, partitioned.files, F.expr("v % 5 = 1"))
    assert got == _expected_counts(partitioned, lambda r: r["v"] % 5 == 1)


def test_touched_file_reads_only_the_condition_columns(spark, partitioned):
    from pyspark.sql import functions as F

    groups = partition_groups(partitioned.files)
    reads = literal_reads(spark, partitioned, groups, uri_column=URI_COLUMN)
    frame = reads[0].filter(F.expr("v > 3")).groupBy(F.xxhash64(URI_COLUMN)).count()
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<v:bigint>" in plan


# --- Data columns named like the scan's own: _metadata, _file, __delta_file_* -------------


def _shadowing(tmp_path, monkeypatch, kind, layout):
    path = shadowing_table_in_layout(tmp_path / "t", monkeypatch, layout, kind)
    return path, DeltaTable(path).snapshot()


def _file_of_each_id(snap) -> dict[int, str]:
    import pyarrow.parquet as pq

    return {
        i: f.path
        for f in snap.files
        for i in pq.read_table(to_absolute(snap.table_root, f.path), columns=["id"])["id"].to_pylist()
    }


@pytest.mark.parametrize("layout", list(SHADOWING_LAYOUTS))
@pytest.mark.parametrize("kind", list(SHADOWING_KINDS))
def test_scan_of_table_with_columns_named_like_scan_internals(spark, tmp_path, monkeypatch, layout, kind):
    path, snap = _shadowing(tmp_path, monkeypatch, kind, layout)
    columns = [f["name"] for f in snap.schema["fields"]]
    df = scan(spark, snap)
    assert df.columns == columns
    assert _comparable(spark_rows(df, columns)) == _comparable(table_rows(path, columns))


@pytest.mark.parametrize("layout", list(SHADOWING_LAYOUTS))
@pytest.mark.parametrize("kind", list(SHADOWING_KINDS))
def test_file_path_of_table_with_columns_named_like_scan_internals(spark, tmp_path, monkeypatch, layout, kind):
    """Each row's file is its own even when a data column is named
    ``_metadata`` (a struct with ``file_path`` included) or ``__delta_file_uri``."""
    path, snap = _shadowing(tmp_path, monkeypatch, kind, layout)
    columns = [f["name"] for f in snap.schema["fields"]]
    name = "path" if FILE_COLUMN in columns else FILE_COLUMN
    df = scan(spark, snap, with_file_path=True, **({} if name == FILE_COLUMN else {"file_column": name}))
    assert df.columns == columns + [name]
    rows = df.collect()
    assert {r["id"]: r[name] for r in rows} == _file_of_each_id(snap)
    assert _comparable([tuple(r)[:-1] for r in rows]) == _comparable(table_rows(path, columns))


def test_file_path_named_like_a_table_column_is_refused(spark, tmp_path, monkeypatch):
    _, snap = _shadowing(tmp_path, monkeypatch, "helpers", "partitioned")  # has a column _file
    for name in (FILE_COLUMN, "_FILE", "v"):
        for files in (None, []):
            with pytest.raises(InvalidInputError, match="file_column"):
                scan(spark, snap, files, with_file_path=True, file_column=name)


@pytest.mark.parametrize("layout", list(SHADOWING_LAYOUTS))
@pytest.mark.parametrize("kind", list(SHADOWING_KINDS))
@pytest.mark.parametrize("which", ["data", "mixed", "on-the-column"])
def test_count_matches_on_table_with_columns_named_like_scan_internals(
    spark, tmp_path, monkeypatch, layout, kind, which
):
    from pyspark.sql import functions as F

    _, snap = _shadowing(tmp_path, monkeypatch, kind, layout)
    columns, struct = SHADOWING_KINDS[kind]
    name = columns[-1]

    def value(r):
        return (r[name] or {}).get("file_path") if struct else r[name]

    sql, keep = {
        "data": ("v % 3 = 0", lambda r: r["v"] % 3 == 0),
        "mixed": ("v % 3 = 0 OR p = 1", lambda r: r["v"] % 3 == 0 or str(r["p"]) == "1"),
        "on-the-column": (shadowing_condition(kind), lambda r: value(r) == f"{name}-1"),
    }[which]
    expected = _expected_counts(snap, keep)
    assert expected
    assert count_matches(spark, snap, snap.files, F.expr(sql)) == expected


@pytest.mark.parametrize("limit", [16, 1], ids=["literal-reads", "file-join"])
def test_partition_column_named_metadata(spark, make_table, monkeypatch, limit):
    """A partition column ``_metadata`` (added from the log, not read) does
    not hide the row's file either."""
    from pyspark.sql import functions as F

    monkeypatch.setattr(scan_module, "MAX_LITERAL_PARTITIONS", limit)

    def rows(ids):
        return pa.table({"id": ids, "_metadata": [f"m{i % 4}" for i in ids], "v": [i % 7 for i in ids]})

    path = make_table(rows(list(range(40))), partition_by=["_metadata"])
    make_table(rows(list(range(100, 120))), mode="append", partition_by=["_metadata"])
    snap = DeltaTable(path).snapshot()
    df = scan(spark, snap, with_file_path=True)
    assert {r["id"]: r[FILE_COLUMN] for r in df.collect()} == _file_of_each_id(snap)
    got = count_matches(spark, snap, snap.files, F.expr("v = 3 OR _metadata = 'm1'"))
    assert got == _expected_counts(snap, lambda r: r["v"] == 3 or r["_metadata"] == "m1")


@pytest.mark.parametrize(
    "text", ["", "a", "abcd", "abcdefgh", "x" * 31, "x" * 32, "y" * 71, "file:/t/p=%C3%A9/f%201.parquet", "é€😀" * 9]
)
def test_xxhash64_equals_sparks(spark, text):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(text,)], "s string")
    assert xxhash64(text) == df.select(F.xxhash64("s")).first()[0]


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
@pytest.mark.parametrize("name", ["dv-partitioned-with-checkpoint", "log-replay-dv-key-cases"])
def test_golden_tables_with_deletion_vectors_read_as_the_oracles_do(spark, golden_dir, monkeypatch, io, name, duckdb_delta):
    """Every scan leaves out the rows the deletion vectors delete: the whole
    table, the file-join plan, and the touched-file count, at every version."""
    import sys

    import pyarrow as pa
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.spark.read import scan as scan_module
    from airflow_delta_provider.spark.read.scan import count_matches, scan

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)  # arrow workers
    table = DeltaTable(str(golden_dir / name))
    latest = table.latest_version()
    for version in range(latest + 1) if io == "hadoop" else [latest]:  # arrow tasks cost more
        snapshot = table.snapshot(version=version)
        rs = RsTable(str(golden_dir / name), version=version)
        expected = pa.table(QueryBuilder().register("t", rs).execute("SELECT * FROM t").read_all())
        by_duckdb = duckdb_delta.execute(
            f"SELECT * FROM delta_scan('{golden_dir / name}', version => {version})"
        ).fetch_arrow_table()
        columns = expected.column_names
        want = sorted(map(repr, expected.select(columns).to_pylist()))
        assert sorted(map(repr, by_duckdb.select(columns).to_pylist())) == want
        got = scan(spark, snapshot, io=io)
        assert sorted(repr(r.asDict()) for r in got.select(*columns).collect()) == want, f"v{version}"
        with monkeypatch.context() as m:
            m.setattr(scan_module, "MAX_LITERAL_PARTITIONS", 0)  # the file-join plan
            joined = scan(spark, snapshot, with_file_path=True, io=io).select(*columns)
            assert sorted(repr(r.asDict()) for r in joined.collect()) == want, f"v{version} (file join)"
        counts = count_matches(spark, snapshot, snapshot.files, None, io=io)
        assert sum(counts.values()) == expected.num_rows == snapshot.num_records
        assert counts == {f.path: f.num_live_records for f in snapshot.files if f.num_live_records}
