"""timestamp_ntz end to end: APPEND, scans, UPDATE and DELETE in both I/O
modes, read back by deltalake (delta-rs) and DuckDB (delta-kernel-rs).

A ``timestamp_ntz`` value is a wall-clock time with no zone, so every reader
must return exactly the value written, whatever the session's or the
driver's time zone. A table gets the ``timestampNtz`` reader and writer
feature the moment such a column arrives, and not before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.partitions import decode_path
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import DeleteCommand, run_delete
from airflow_delta_provider.spark.commands.update import run_update
from airflow_delta_provider.spark.read.scan import scan

from ..arrow_support import arrow_workers, commit_shape  # noqa: F401 - the fixture
from .dml_support import _sorted, commit_actions, rows_deltalake, rows_duckdb, state

pytestmark = pytest.mark.usefixtures("arrow_workers")

NTZ = pa.timestamp("us")
JAN_1 = dt.datetime(2024, 1, 1)
JAN_2 = dt.datetime(2024, 1, 2, 3, 4, 5, 6)
#: The protocol a reader-1/writer-2 table moves to, as delta-spark upgrades it.
UPGRADED = Protocol(3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz"))


def _rows() -> pa.Table:
    """Partition ``p`` (two values and null) and data column ``t`` with
    microseconds, a value before the epoch and nulls."""
    return pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "p": pa.array([JAN_1, JAN_2, JAN_1, None, JAN_2, JAN_1], NTZ),
            "t": pa.array(
                [
                    dt.datetime(2024, 1, 1, 12, 30, 0, 123456),
                    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                    None,
                    dt.datetime(2000, 2, 29),
                    dt.datetime(2024, 1, 1, 12, 30, 0, 124000),
                    dt.datetime(1999, 12, 31, 23, 59, 59),
                ],
                NTZ,
            ),
        }
    )


def _source(tmp_path, table: pa.Table, name: str = "src") -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    pq.write_table(table, str(folder / "part-0.parquet"))
    return str(folder)


def _ntz_table(spark, tmp_path, io: str, name: str = "t") -> str:
    path = str(tmp_path / name)
    run_append(spark, path, _source(tmp_path, _rows()), "parquet", partition_by=["p"], io=io)
    return path


# --- APPEND and scans ------------------------------------------------------------


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_append_partitioned_by_timestamp_ntz_reads_the_same_everywhere(spark, tmp_path, duckdb_delta, io):
    path = _ntz_table(spark, tmp_path, io)
    snap = DeltaTable(path).snapshot()
    assert snap.protocol == UPGRADED
    assert [f["type"] for f in snap.schema["fields"]] == ["long", "timestamp_ntz", "timestamp_ntz"]
    # Partition values as delta-spark logs them: Spark's text, no zone.
    assert {f.partition_values["p"] for f in snap.files} == {"2024-01-01 00:00:00", "2024-01-02 03:04:05.000006", None}
    expected = _sorted(_rows())
    assert rows_deltalake(path) == expected
    assert rows_duckdb(duckdb_delta, path) == expected
    ours = scan(spark, snap, io=io).toArrow()
    assert ours.schema.field("p").type == ours.schema.field("t").type == NTZ
    assert _sorted(ours) == expected
    # DuckDB filters on the same wall-clock values.
    assert [r[0] for r in duckdb_delta.execute(
        f"SELECT id FROM delta_scan('{path}') WHERE p = TIMESTAMP '2024-01-02 03:04:05.000006' ORDER BY id"
    ).fetchall()] == [1, 4]


def test_stats_of_timestamp_ntz_columns_are_milliseconds_without_a_zone(spark, tmp_path):
    path = _ntz_table(spark, tmp_path, "hadoop")
    by_partition = {f.partition_values["p"]: json.loads(f.stats) for f in DeltaTable(path).snapshot().files}
    jan_1 = by_partition["2024-01-01 00:00:00"]
    assert jan_1["minValues"]["t"] == "1999-12-31T23:59:59.000"
    assert jan_1["maxValues"]["t"] == "2024-01-01T12:30:00.123"  # floored from .123456
    assert jan_1["nullCount"]["t"] == 1
    assert by_partition["2024-01-02 03:04:05.000006"]["minValues"]["t"] == "1969-12-31T23:59:59.999"


def test_both_io_modes_write_the_same_table(spark, tmp_path):
    hadoop = _ntz_table(spark, tmp_path, "hadoop", "h")
    arrow = _ntz_table(spark, tmp_path, "arrow", "a")
    assert commit_shape(hadoop, 0) == commit_shape(arrow, 0)


def test_scan_values_do_not_shift_with_the_drivers_time_zone(spark, golden_copy):
    """PySpark turns a naive datetime into an instant in the driver's local
    zone; the partition literals must not depend on it (golden
    data-reader-timestamp_ntz, written by delta-spark, three partitions: the
    per-partition literal plan)."""
    path = golden_copy("data-reader-timestamp_ntz")
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "America/Los_Angeles"
    time.tzset()
    try:
        snap = DeltaTable(path).snapshot()
        literal_plan = scan(spark, snap, io="hadoop").select("id", "tsNtzPartition").collect()
        file_join_plan = scan(spark, snap, with_file_path=True, io="hadoop").select("id", "tsNtzPartition").collect()
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()
    for rows in (literal_plan, file_join_plan):
        by_id = {r["id"]: r["tsNtzPartition"] for r in rows}
        assert by_id[0] == dt.datetime(2021, 11, 18, 2, 30, 0, 123456)
        assert by_id[3] == dt.datetime(2013, 7, 5, 17, 1, 0, 123456)
        assert by_id[6] is None


# --- The protocol upgrade ------------------------------------------------------------


def _protocol_actions(path: str, version: int) -> list[dict]:
    return [a["protocol"] for a in commit_actions(path, version) if "protocol" in a]


def test_protocol_is_upgraded_when_a_timestamp_ntz_column_arrives_and_not_before(spark, tmp_path, duckdb_delta):
    path = str(tmp_path / "t")
    plain = pa.table({"id": pa.array([1, 2], pa.int64())})
    run_append(spark, path, _source(tmp_path, plain, "plain"), "parquet")
    run_append(spark, path, _source(tmp_path, plain, "plain"), "parquet")
    assert DeltaTable(path).snapshot().protocol == Protocol(1, 2)
    assert _protocol_actions(path, 1) == []

    # Without merge_schema the new column is refused, and nothing changes.
    with_ntz = pa.table({"id": pa.array([3], pa.int64()), "t": pa.array([JAN_2], NTZ)})
    src = _source(tmp_path, with_ntz, "ntz")
    with pytest.raises(SchemaMismatchError):
        run_append(spark, path, src, "parquet")
    assert DeltaTable(path).snapshot().protocol == Protocol(1, 2)

    result = run_append(spark, path, src, "parquet", merge_schema=True)
    assert _protocol_actions(path, result.version) == [UPGRADED.to_json()]
    snap = DeltaTable(path).snapshot()
    assert snap.protocol == UPGRADED
    assert snap.schema["fields"][-1]["type"] == "timestamp_ntz"
    expected = [(1, None), (1, None), (2, None), (2, None), (3, "2024-01-02 03:04:05.000006")]
    assert rows_deltalake(path) == rows_duckdb(duckdb_delta, path) == expected

    # Later appends keep the protocol and write none.
    again = run_append(spark, path, src, "parquet")
    assert _protocol_actions(path, again.version) == []
    assert DeltaTable(path).snapshot().protocol == UPGRADED


def test_overwrite_schema_and_nested_columns_upgrade_the_protocol(spark, tmp_path):
    path = str(tmp_path / "t")
    run_append(spark, path, _source(tmp_path, pa.table({"id": [1]}), "plain"), "parquet")
    nested = pa.table({"s": pa.array([{"at": JAN_1}], pa.struct([("at", NTZ)]))})
    result = run_append(spark, path, _source(tmp_path, nested, "nested"), "parquet", mode="overwrite",
                        overwrite_schema=True)
    assert _protocol_actions(path, result.version) == [UPGRADED.to_json()]
    assert DeltaTable(path).snapshot().protocol == UPGRADED


# --- UPDATE and DELETE -------------------------------------------------------------------


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_update_and_delete_by_timestamp_ntz_conditions(spark, tmp_path, duckdb_delta, io):
    path = _ntz_table(spark, tmp_path, io)
    before = {f.path: f.partition_values["p"] for f in DeltaTable(path).snapshot().files}

    # Partition pruning by a TIMESTAMP_NTZ literal: only that partition's file
    # is rewritten, every row of it updated, none copied.
    updated = run_update(spark, path, "p = TIMESTAMP_NTZ '2024-01-01 00:00:00'", {"t": "t + INTERVAL 1 DAY"}, io=io)
    assert updated.metrics["numUpdatedRows"] == 3 and updated.metrics["numCopiedRows"] == 0
    removed = [a["remove"]["path"] for a in commit_actions(path) if "remove" in a]
    assert [before[p] for p in removed] == ["2024-01-01 00:00:00"]

    # A data condition on the timestamp_ntz column, at microsecond precision.
    condition = "t < TIMESTAMP_NTZ '2000-01-01 00:00:00' OR t = '2024-01-02 12:30:00.123456'"
    deleted = run_delete(spark, path, condition, io=io)
    assert deleted.metrics["numDeletedRows"] == 2  # ids 1 (1969) and 0 (updated to Jan 2)

    rows = _rows().to_pylist()
    for r in rows:
        if r["p"] == JAN_1 and r["t"] is not None:
            r["t"] += dt.timedelta(days=1)
    expected = _sorted(pa.Table.from_pylist([r for r in rows if r["id"] not in (0, 1)], schema=_rows().schema))
    assert rows_deltalake(path) == rows_duckdb(duckdb_delta, path) == expected


def test_the_two_io_modes_commit_the_same_update(spark, tmp_path):
    hadoop = _ntz_table(spark, tmp_path, "hadoop", "h")
    arrow = _ntz_table(spark, tmp_path, "arrow", "a")
    condition = "t >= TIMESTAMP_NTZ '2024-01-01 12:30:00.123456'"
    run_update(spark, hadoop, condition, {"id": "id * 10"}, io="hadoop")
    run_update(spark, arrow, condition, {"id": "id * 10"}, io="arrow")
    assert commit_shape(hadoop, 1)["adds"] == commit_shape(arrow, 1)["adds"]
    assert commit_shape(hadoop, 1)["metrics"] == commit_shape(arrow, 1)["metrics"]


def test_stats_skip_files_by_timestamp_ntz(spark, tmp_path):
    """One file per year: a condition on the data column reads only the file
    whose min/max can hold a match (the max widened by 1 ms)."""
    path = str(tmp_path / "t")
    for year in (2021, 2022, 2023):
        data = pa.table({"id": [year], "t": pa.array([dt.datetime(year, 6, 1, 0, 0, 0, 999)], NTZ)})
        run_append(spark, path, _source(tmp_path, data, f"y{year}"), "parquet")
    cmd = DeleteCommand(spark, path, "t > TIMESTAMP_NTZ '2022-06-01 00:00:00.000500'", None)
    cmd.prepare()
    assert sorted(json.loads(f.stats)["minValues"]["t"] for f in cmd.candidates) == [
        "2022-06-01T00:00:00.000",
        "2023-06-01T00:00:00.000",
    ]
    result = cmd.run()
    assert result.metrics["numDeletedRows"] == 2
    assert rows_deltalake(path) == [(2021, "2021-06-01 00:00:00.000999")]


# --- Bad input -------------------------------------------------------------------------


def test_a_malformed_timestamp_ntz_literal_changes_nothing(spark, tmp_path):
    path = _ntz_table(spark, tmp_path, "hadoop")
    before = state(path)
    with pytest.raises(InvalidInputError, match="2024-13-01"):
        run_delete(spark, path, "t < TIMESTAMP_NTZ '2024-13-01 00:00:00'")
    assert state(path) == before


def test_a_malformed_timestamp_ntz_partition_value_in_the_log_is_a_typed_error(spark, tmp_path):
    """A commit (by another writer) logged a partition value that is not
    ``yyyy-MM-dd HH:mm:ss[.ffffff]``: commands fail naming it, writing nothing."""
    path = _ntz_table(spark, tmp_path, "hadoop")
    good = next(f for f in DeltaTable(path).snapshot().files if f.partition_values["p"] == "2024-01-01 00:00:00")
    folder = os.path.join(path, "p=bad")
    os.makedirs(folder)
    shutil.copy(os.path.join(path, decode_path(good.path)), folder)
    name = good.path.rsplit("/", 1)[1]
    bad = {"add": {**good.to_json(), "path": f"p=bad/{name}", "partitionValues": {"p": "2024-01-01T00:00:00Z"}}}
    with open(os.path.join(path, "_delta_log", f"{1:020d}.json"), "w") as fh:
        fh.write(json.dumps(bad) + "\n")
    before = state(path)
    for command in (
        lambda: run_delete(spark, path, "t IS NULL"),
        lambda: run_update(spark, path, "p = TIMESTAMP_NTZ '2024-01-01 00:00:00'", {"id": "0"}),
        lambda: scan(spark, DeltaTable(path).snapshot()).collect(),
    ):
        with pytest.raises(InvalidInputError, match="'2024-01-01T00:00:00Z' is not a valid timestamp_ntz"):
            command()
        assert state(path) == before
