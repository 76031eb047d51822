"""CONVERT TO DELTA with no Spark: folders written by pyarrow (Hive
partitions), by delta-rs (its log removed) and by Spark become tables that
delta-rs and DuckDB read with the Parquet folder's rows, with the stats
delta-rs's ``convert_to_deltalake`` computes; bad input writes nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    SchemaMismatchError,
    TableAlreadyExistsError,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.convert.plan import convert_to_delta, parse_partition_spec

ROWS = 40


def orders(n: int = ROWS) -> pa.Table:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "amount": pa.array([i * 2.5 for i in range(n)], pa.float64()),
            "name": [f"customer {i}" if i % 7 else None for i in range(n)],
            "at": pa.array([start + dt.timedelta(hours=i) for i in range(n)], pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2026, 1, 1 + i % 3) for i in range(n)], pa.date32()),
            "region": ["eu" if i % 2 else "us" for i in range(n)],
        }
    )


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime_ns); a write of any kind changes it."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def log_adds(root: Path) -> dict[str, dict[str, Any]]:
    """The adds of version 0, by decoded path."""
    out = {}
    for line in (root / "_delta_log" / "00000000000000000000.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            out[unquote(action["add"]["path"])] = action["add"]
    return out


def _value(v: Any) -> Any:
    """A stats value as both writers mean it (delta-rs spells timestamps without milliseconds)."""
    if isinstance(v, str) and len(v) >= 20 and v[10] == "T" and v.endswith("Z"):
        return dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    return v


def delta_rs_convert(root: Path, partitions: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """delta-rs's convert of a copy of ``root``: its adds by decoded path."""
    from deltalake import Field, Schema, convert_to_deltalake
    from deltalake.schema import PrimitiveType

    copy = root.parent / f"{root.name}-delta-rs"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("_delta_log"))
    schema = Schema([Field(name, PrimitiveType(t)) for name, t in partitions]) if partitions else None
    convert_to_deltalake(str(copy), partition_by=schema, partition_strategy="hive" if partitions else None)
    return log_adds(copy)


def _as_ours(stats: dict[str, Any], floats: set[str]) -> dict[str, Any]:
    """delta-rs's stats with the two documented differences taken out: it
    bounds float columns (we leave them out, as delta-spark does: footers skip
    NaN), and it writes empty objects where we write none."""
    out = dict(stats)
    for kind in ("minValues", "maxValues"):
        out[kind] = {k: v for k, v in out.get(kind, {}).items() if k not in floats}
    return {k: v for k, v in out.items() if v != {}}


def assert_stats_equal_delta_rs(root: Path, partitions: list[tuple[str, str]]) -> None:
    ours, theirs = log_adds(root), delta_rs_convert(root, partitions)
    assert set(ours) == set(theirs)
    floats = {f["name"] for f in DeltaTable(root).snapshot().schema["fields"] if f["type"] in ("float", "double")}
    for path, add in ours.items():
        assert _value(json.loads(add["stats"])) == _value(_as_ours(json.loads(theirs[path]["stats"]), floats)), path
        assert add["partitionValues"] == theirs[path]["partitionValues"], path
        assert add["size"] == theirs[path]["size"]


def assert_readers_see(root: Path, expected: pa.Table, duckdb_delta) -> None:
    from deltalake import DeltaTable as RsTable

    columns = expected.column_names
    by_rs = RsTable(str(root)).to_pyarrow_table().select(columns).sort_by("id")
    assert by_rs.to_pylist() == expected.sort_by("id").to_pylist()
    quoted = ", ".join(f'"{c}"' for c in columns)
    by_duckdb = duckdb_delta.execute(f"SELECT {quoted} FROM delta_scan('{root}') ORDER BY id")
    assert by_duckdb.fetch_arrow_table().to_pylist() == expected.sort_by("id").to_pylist()


def test_hive_partitioned_folder_by_pyarrow(tmp_path, duckdb_delta) -> None:
    root = tmp_path / "orders"
    pq.write_to_dataset(orders(), root, partition_cols=["day", "region"], max_rows_per_group=8)
    (root / "_SUCCESS").touch()
    before = tree(root)

    result, plan = convert_to_delta(DeltaTable(root), "day date, region STRING", token="t-1")

    assert result.version == 0
    assert plan.partition_columns == ["day", "region"]
    assert plan.metrics().to_dict() == {"numConvertedFiles": 6}
    snapshot = DeltaTable(root).snapshot()
    assert [f["name"] for f in snapshot.schema["fields"]] == ["id", "amount", "name", "at", "day", "region"]
    assert [f["type"] for f in snapshot.schema["fields"]] == ["long", "double", "string", "timestamp", "date", "string"]
    info = DeltaTable(root).history()[0]
    assert (info["operation"], info["operationParameters"]["partitionedBy"]) == ("CONVERT", '["day", "region"]')
    assert {k: v for k, v in tree(root).items() if not k.startswith("_delta_log")} == before  # data left in place
    assert_readers_see(root, orders(), duckdb_delta)
    assert_stats_equal_delta_rs(root, [("day", "date"), ("region", "string")])


def test_partition_values_are_unescaped_typed_and_null(tmp_path, duckdb_delta) -> None:
    """Hive escapes (``%20``, ``%3A``) and ``__HIVE_DEFAULT_PARTITION__`` (null),
    as delta-spark reads them; the values are stored in their canonical form."""
    root = tmp_path / "events"
    for folder, ids in (("city=New%20York/n=007", [1, 2]), ("city=__HIVE_DEFAULT_PARTITION__/n=1", [3])):
        (root / folder).mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / folder / "part-0.parquet")
    convert_to_delta(DeltaTable(root), "city string, n int")
    values = {add["partitionValues"]["n"]: add["partitionValues"]["city"] for add in log_adds(root).values()}
    assert values == {"7": "New York", "1": None}
    expected = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["New York", "New York", None],
                         "n": pa.array([7, 7, 1], pa.int32())})  # fmt: skip
    assert_readers_see(root, expected, duckdb_delta)


def test_folder_written_by_delta_rs_with_its_log_removed(tmp_path, duckdb_delta) -> None:
    from deltalake import write_deltalake

    root = tmp_path / "rs"
    write_deltalake(str(root), orders(), partition_by=["region"])
    write_deltalake(str(root), orders(5), partition_by=["region"], mode="append")
    shutil.rmtree(root / "_delta_log")

    convert_to_delta(DeltaTable(root), "region string")

    assert_readers_see(root, pa.concat_tables([orders(), orders(5)]), duckdb_delta)
    assert_stats_equal_delta_rs(root, [("region", "string")])


def test_files_without_statistics_get_only_row_counts(tmp_path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    pq.write_table(orders(10), root / "a.parquet", write_statistics=False)
    pq.write_table(orders(4), root / "b.parquet")
    convert_to_delta(DeltaTable(root))
    stats = {path: json.loads(add["stats"]) for path, add in log_adds(root).items()}
    assert stats["a.parquet"] == {"numRecords": 10}
    assert stats["b.parquet"]["maxValues"]["id"] == 3
    assert_stats_equal_delta_rs(root, [])


def test_hidden_files_and_folders_are_skipped(tmp_path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(orders(3), root / "data.parquet")
    for hidden in ("_SUCCESS", "_committed_123", ".data.parquet.crc", ".hidden.parquet", "_temporary/0/x.parquet"):
        (root / hidden).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(orders(1), root / hidden) if hidden.endswith(".parquet") else (root / hidden).touch()
    _, plan = convert_to_delta(DeltaTable(root))
    assert [a.path for a in plan.adds] == ["data.parquet"]


def test_columns_missing_from_some_files_are_null_there(tmp_path, duckdb_delta) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), root / "1.parquet")
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}), root / "2.parquet")
    convert_to_delta(DeltaTable(root))
    assert_readers_see(root, pa.table({"id": pa.array([1, 2], pa.int64()), "extra": [None, "x"]}), duckdb_delta)
    assert json.loads(log_adds(root)["1.parquet"]["stats"])["nullCount"] == {"id": 0, "extra": 1}


def test_stats_columns_follow_the_indexed_columns_property(tmp_path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(orders(5).drop_columns(["day", "region"]), root / "f.parquet")
    convert_to_delta(DeltaTable(root), properties={"delta.dataSkippingNumIndexedCols": "1", "delta.appendOnly": "true"})
    stats = json.loads(log_adds(root)["f.parquet"]["stats"])
    assert (stats["minValues"], stats["maxValues"], stats["nullCount"]) == ({"id": 0}, {"id": 4}, {"id": 0})
    assert DeltaTable(root).snapshot().configuration["delta.appendOnly"] == "true"


def test_folder_written_by_spark(tmp_path, spark, duckdb_delta) -> None:
    """Spark's own files: _SUCCESS, .crc files, INT96 timestamps (its default) read as ``timestamp``."""
    root = tmp_path / "spark"
    data = orders()
    spark.createDataFrame(data.to_pandas()).write.partitionBy("region").parquet(str(root))
    assert any(p.name.startswith(".") for p in root.rglob("*.crc"))
    (root / "_SUCCESS").touch()  # the test session's Spark is configured to write no marker
    convert_to_delta(DeltaTable(root), "region string")
    snapshot = DeltaTable(root).snapshot()
    assert {f["name"]: f["type"] for f in snapshot.schema["fields"]}["at"] == "timestamp"
    assert_readers_see(root, data.select(["id", "amount", "name", "region"]), duckdb_delta)


# --- bad input: a clear error, nothing written --------------------------------------


def _refused(root: Path, error: type[Exception], match: str, *args: Any, **kwargs: Any) -> None:
    before = tree(root) if root.exists() else {}
    with pytest.raises(error, match=match):
        convert_to_delta(DeltaTable(root), *args, **kwargs)
    assert (tree(root) if root.exists() else {}) == before
    assert not (root / "_delta_log").exists() or before


def test_incompatible_schemas_are_refused_naming_both_files(tmp_path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"id": ["one"]}), root / "b.parquet")
    _refused(root, SchemaMismatchError, r"column 'id' is long in a.parquet but string in b.parquet")


@pytest.mark.parametrize(
    "spec, match",
    [
        ("region string", r"expected 1 partition folder\(s\) \(region=...\), found 2"),
        ("region string, day date", r"folder 'day=2026-01-01' is not region=<value>"),
        ("day int, region string", r"partition column 'day'.*not a valid integer"),
        ("day date, region varchar", r"unknown type 'varchar'"),
        ("day date region string", r"unknown type"),
        (None, r"is in a folder: give the partition columns"),
        ("day date, day string", r"names 'day' twice"),
    ],
)
def test_a_wrong_partition_spec_is_refused(tmp_path, spec, match) -> None:
    root = tmp_path / "t"
    pq.write_to_dataset(orders(6), root, partition_cols=["day", "region"])
    _refused(root, InvalidInputError, match, spec)


def test_a_partition_column_that_is_also_a_data_column_is_refused(tmp_path) -> None:
    root = tmp_path / "t"
    (root / "region=eu").mkdir(parents=True)
    pq.write_table(orders(2), root / "region=eu" / "f.parquet")
    _refused(root, InvalidInputError, "has a column 'region', which is also a partition column", "region string")


def test_an_existing_delta_table_is_refused(tmp_path) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path), orders(3))
    _refused(tmp_path, TableAlreadyExistsError, "is a Delta table already")


@pytest.mark.parametrize("content", [[], ["_SUCCESS", "notes.txt"]])
def test_an_empty_folder_is_refused(tmp_path, content) -> None:
    for name in content:
        (tmp_path / name).touch()
    _refused(tmp_path, InvalidInputError, "no Parquet files under")


def test_a_file_that_is_not_parquet_is_refused_by_name(tmp_path) -> None:
    pq.write_table(orders(2), tmp_path / "good.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    _refused(tmp_path, InvalidInputError, "bad.parquet is not a readable Parquet file")


def test_column_mapping_is_refused(tmp_path) -> None:
    pq.write_table(orders(2), tmp_path / "f.parquet")
    _refused(
        tmp_path, InvalidInputError, "cannot turn column mapping on", properties={"delta.columnMapping.mode": "name"}
    )


def test_partition_spec_parsing() -> None:
    assert parse_partition_spec("a int, `b c` DECIMAL(10, 2),d bigint") == [
        ("a", "integer"), ("b c", "decimal(10,2)"), ("d", "long"),
    ]  # fmt: skip
    assert parse_partition_spec("  ") == parse_partition_spec(None) == []


def test_nothing_is_written_under_a_missing_root(tmp_path) -> None:
    root = tmp_path / "missing"
    _refused(root, InvalidInputError, "no Parquet files under")
    assert not root.exists()
    assert os.listdir(tmp_path) == []


def test_on_s3_footers_come_from_ranged_reads_and_match_a_local_conversion(tmp_path, s3_bucket) -> None:
    """On an object store only each file's end is read: a footer longer than
    the first ranged read (a file of 800 columns) takes a second one."""
    import io

    wide = pa.table({f"c{i}": pa.array([i], pa.int64()) for i in range(800)})
    files = {"region=eu/a.parquet": orders(5).drop_columns(["region"]),
             "region=us/b.parquet": orders(3).drop_columns(["region"])}  # fmt: skip
    local, wide_local = tmp_path / "local", tmp_path / "wide"
    uri, wide_uri = s3_bucket.uri("orders"), s3_bucket.uri("wide")
    for rel, data in [*files.items(), ("w.parquet", wide)]:
        sink = io.BytesIO()
        pq.write_table(data, sink)
        root, location = (wide_local, wide_uri) if rel == "w.parquet" else (local, uri)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(sink.getvalue())
        DeltaTable(location, s3_bucket.storage_options).storage.put(rel, sink.getvalue())
    assert pq.read_metadata(wide_local / "w.parquet").serialized_size > 64 * 1024

    for here, there, spec in ((local, uri, "region string"), (wide_local, wide_uri, None)):
        convert_to_delta(DeltaTable(here), spec)
        convert_to_delta(DeltaTable(there, s3_bucket.storage_options), spec)
        remote = {a.path: (a.stats, a.partition_values, a.size)
                  for a in DeltaTable(there, s3_bucket.storage_options).snapshot().files}  # fmt: skip
        assert remote == {a.path: (a.stats, a.partition_values, a.size) for a in DeltaTable(here).snapshot().files}


def test_on_s3_a_file_that_is_not_parquet_is_refused_and_nothing_written(s3_bucket) -> None:
    table = DeltaTable(s3_bucket.uri("t"), s3_bucket.storage_options)
    table.storage.put("bad.parquet", b"PAR1 but not really")
    with pytest.raises(InvalidInputError, match=r"bad\.parquet is not a readable Parquet file"):
        convert_to_delta(table)
    assert [m.path for m in table.storage.list_tree("")] == ["bad.parquet"]


def test_the_protocol_is_what_the_properties_and_the_schema_need(tmp_path, duckdb_delta) -> None:
    """Deletion vectors (reader 3 / writer 7) from a property; ``timestamp_ntz`` from naive timestamps."""
    data = pa.table(
        {"id": pa.array([1, 2], pa.int64()), "local": pa.array([dt.datetime(2026, 1, 1)] * 2, pa.timestamp("us"))}
    )
    pq.write_table(data, tmp_path / "f.parquet")
    convert_to_delta(DeltaTable(tmp_path), properties={"delta.enableDeletionVectors": "true"})
    snapshot = DeltaTable(tmp_path).snapshot()
    assert {f["name"]: f["type"] for f in snapshot.schema["fields"]} == {"id": "long", "local": "timestamp_ntz"}
    protocol = snapshot.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert {"deletionVectors", "timestampNtz"} <= set(protocol.reader_features or ()) & set(
        protocol.writer_features or ()
    )
    # delta-rs's pyarrow reader refuses deletion vectors; DuckDB (delta-kernel-rs) reads them.
    read = duckdb_delta.execute(f"SELECT id, local FROM delta_scan('{tmp_path}') ORDER BY id").fetch_arrow_table()
    assert read.to_pylist() == data.to_pylist()
