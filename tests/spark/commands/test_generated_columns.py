"""Generated columns (``generatedColumns``): tables created by delta-rs with
``delta.generationExpression``; our APPEND computes what the source lacks and
checks what it gives, UPDATE and MERGE recompute, and delta-rs and DuckDB read
back the values we computed."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, InvariantViolationError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.merge.command import run_merge
from airflow_delta_provider.spark.commands.update import run_update

from ..arrow_support import arrow_workers  # noqa: F401 - the fixture
from .dml_support import state

deltalake = pytest.importorskip("deltalake")
UTC = dt.timezone.utc


def create(path: str) -> str:
    """A delta-rs table: d = CAST(ts AS DATE) (the partition column), total = price * qty."""
    from deltalake import DeltaTable as RsTable
    from deltalake.schema import Field, Schema

    schema = Schema(
        [
            Field("id", "long", True),
            Field("ts", "timestamp", True),
            Field("price", "long", True),
            Field("qty", "long", True),
            Field("total", "long", True, metadata={"delta.generationExpression": "price * qty"}),
            Field("d", "date", True, metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
        ]
    )
    RsTable.create(path, schema, partition_by=["d"])
    return path


def source(tmp_path, name: str, rows: list[dict]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    types = {
        "id": pa.int64(),
        "ts": pa.timestamp("us", tz="UTC"),
        "price": pa.int64(),
        "qty": pa.int64(),
        "total": pa.int64(),
        "d": pa.date32(),
    }
    columns = {k: pa.array([r[k] for r in rows], types[k]) for k in rows[0]}
    pq.write_table(pa.table(columns), folder / "a.parquet")
    return str(folder)


def ts(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, tzinfo=UTC)


def rs_rows(path: str) -> list[tuple]:
    rows = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    return sorted((r["id"], r["total"], r["d"]) for r in rows)


@pytest.fixture
def table(spark, tmp_path) -> str:
    path = create(str(tmp_path / "t"))
    rows = [{"id": i, "ts": ts(1 + i % 3, 10 + i), "price": i, "qty": 2} for i in range(6)]
    run_append(spark, path, source(tmp_path, "seed", rows))
    return path


def test_append_computes_generated_columns_the_source_lacks(spark, table, duckdb_delta):
    assert rs_rows(table) == [(i, 2 * i, dt.date(2024, 1, 1 + i % 3)) for i in range(6)]
    got = duckdb_delta.execute(f"SELECT id, total, d FROM delta_scan('{table}') ORDER BY id").fetchall()
    assert got == [(i, 2 * i, dt.date(2024, 1, 1 + i % 3)) for i in range(6)]
    snap = DeltaTable(table).snapshot()
    assert sorted(f.partition_values["d"] for f in snap.files) == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert snap.protocol.min_writer_version == 4  # as delta-rs created it


def test_append_checks_generated_columns_the_source_gives(spark, table, tmp_path):
    good = [{"id": 10, "ts": ts(5, 1), "price": 3, "qty": 3, "total": 9, "d": dt.date(2024, 1, 5)}]
    run_append(spark, table, source(tmp_path, "good", good))
    assert (10, 9, dt.date(2024, 1, 5)) in rs_rows(table)
    before = state(table)
    bad = [{"id": 11, "ts": ts(5, 1), "price": 3, "qty": 3, "total": 10, "d": dt.date(2024, 1, 5)}]
    with pytest.raises(
        InvariantViolationError,
        match=r"generated column total must equal its expression price \* qty; the row has total = 10, the expression gives 9",
    ):
        run_append(spark, table, source(tmp_path, "bad", bad))
    nulled = [{"id": 12, "ts": ts(5, 1), "price": 3, "qty": 3, "total": None, "d": dt.date(2024, 1, 5)}]
    with pytest.raises(InvariantViolationError, match="total = NULL"):  # NULL is not 9: <=>, as delta-spark
        run_append(spark, table, source(tmp_path, "nulled", nulled))
    assert state(table) == before  # no commit, no leftover data file


def test_delta_rs_reads_and_checks_what_we_wrote(spark, table, tmp_path):
    """delta-rs enforces the generated columns of the table we appended to: it
    accepts rows it computes itself after ours."""
    from deltalake import write_deltalake

    rows = pa.table(
        {
            "id": pa.array([20], pa.int64()),
            "ts": pa.array([ts(9, 0)], pa.timestamp("us", tz="UTC")),
            "price": pa.array([5], pa.int64()),
            "qty": pa.array([5], pa.int64()),
        }
    )
    write_deltalake(table, rows, mode="append")
    assert (20, 25, dt.date(2024, 1, 9)) in rs_rows(table)


def test_update_recomputes_generated_columns_and_checks_explicit_sets(spark, table):
    run_update(spark, table, "id = 1", {"qty": "qty + 8"})  # total follows: 1 * 10
    run_update(spark, table, "id = 2", {"ts": "TIMESTAMP '2024-02-01 00:00:00'"})  # moves partition
    rows = rs_rows(table)
    assert (1, 10, dt.date(2024, 1, 2)) in rows
    assert (2, 4, dt.date(2024, 2, 1)) in rows
    assert (0, 0, dt.date(2024, 1, 1)) in rows  # untouched rows keep their values
    run_update(spark, table, "id = 3", {"price": "7", "total": "14"})  # agrees with the expression
    assert (3, 14, dt.date(2024, 1, 1)) in rs_rows(table)
    before = state(table)
    with pytest.raises(InvariantViolationError, match="generated column total"):
        run_update(spark, table, "id = 4", {"total": "1"})
    assert state(table) == before


def test_update_with_a_partition_only_condition_recomputes_too(spark, table):
    run_update(spark, table, "d = DATE '2024-01-03'", {"price": "price + 100"})
    rows = {r[0]: r for r in rs_rows(table)}
    assert rows[2][1] == 2 * 102 and rows[5][1] == 2 * 105
    assert rows[1][1] == 2


def test_merge_recomputes_on_update_and_computes_on_insert(spark, table, tmp_path, duckdb_delta):
    src = source(
        tmp_path,
        "src",
        [
            {"id": 1, "ts": ts(7, 0), "price": 50, "qty": 2},
            {"id": 30, "ts": ts(8, 0), "price": 4, "qty": 4},
        ],
    )
    clauses = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]
    run_merge(spark, table, src, "t.id = s.id", clauses)
    rows = rs_rows(table)
    assert (1, 100, dt.date(2024, 1, 7)) in rows
    assert (30, 16, dt.date(2024, 1, 8)) in rows
    assert len(rows) == 7
    # explicit assignments: the generated column left out is computed from the new values
    clauses = [
        {"when": "matched", "update": {"qty": "s.qty"}},
        {"when": "not_matched", "insert": {"id": "s.id", "ts": "s.ts", "price": "s.price", "qty": "s.qty"}},
    ]
    src2 = source(
        tmp_path,
        "src2",
        [{"id": 0, "ts": ts(1, 0), "price": 0, "qty": 9}, {"id": 31, "ts": ts(2, 3), "price": 2, "qty": 3}],
    )
    run_merge(spark, table, src2, "t.id = s.id", clauses)
    got = duckdb_delta.execute(
        f"SELECT id, total, d FROM delta_scan('{table}') WHERE id IN (0, 31) ORDER BY id"
    ).fetchall()
    assert got == [(0, 0, dt.date(2024, 1, 1)), (31, 6, dt.date(2024, 1, 2))]
    before = state(table)
    with pytest.raises(InvariantViolationError, match="generated column total"):
        run_merge(spark, table, src2, "t.id = s.id", [{"when": "matched", "update": {"total": "-1"}}])
    assert state(table) == before


def test_a_timestamp_condition_prunes_by_the_generated_partition(spark, table):
    from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files

    snap = DeltaTable(table).snapshot()
    kept = prune_files(snap.files, Predicate.parse("ts >= '2024-01-02 10:00:00'"), snap.schema, snap.partition_columns)
    assert sorted(f.partition_values["d"] for f in kept) == ["2024-01-02", "2024-01-03"]
    result = run_delete(spark, table, "ts >= '2024-01-03 00:00:00'")
    assert result.metrics["numRemovedFiles"] == 1  # only d=2024-01-03 was read and rewritten
    assert sorted(r[0] for r in rs_rows(table)) == [0, 1, 3, 4]


def test_a_generation_expression_that_does_not_parse_is_refused(spark, tmp_path):
    from deltalake import DeltaTable as RsTable
    from deltalake.schema import Field, Schema

    path = str(tmp_path / "broken")
    RsTable.create(
        path,
        Schema(
            [Field("id", "long", True), Field("g", "long", True, metadata={"delta.generationExpression": "id +* 2"})]
        ),
    )
    before = state(path)
    with pytest.raises(InvalidInputError, match="generation expression of column g does not parse"):
        run_append(spark, path, source(tmp_path, "s", [{"id": 1}]))
    assert state(path) == before


@pytest.mark.usefixtures("arrow_workers")
def test_arrow_io_computes_and_checks_too(spark, tmp_path):
    path = create(str(tmp_path / "arrow"))
    run_append(spark, path, source(tmp_path, "a", [{"id": 1, "ts": ts(4, 4), "price": 6, "qty": 7}]), io="arrow")
    assert rs_rows(path) == [(1, 42, dt.date(2024, 1, 4))]
    before = state(path)
    bad = [{"id": 2, "ts": ts(4, 4), "price": 1, "qty": 1, "total": 5, "d": dt.date(2024, 1, 4)}]
    with pytest.raises(InvariantViolationError, match="generated column total"):
        run_append(spark, path, source(tmp_path, "bad", bad), io="arrow")
    assert state(path) == before


def test_change_data_postimages_carry_recomputed_generated_columns(spark, table, tmp_path):
    """With the change data feed on, UPDATE's and MERGE's postimages hold the
    recomputed generated columns; delta-rs's load_cdf reads them."""
    more = [{"id": 40, "ts": ts(6, 0), "price": 1, "qty": 1}]
    run_append(spark, table, source(tmp_path, "cdf", more), table_properties={"delta.enableChangeDataFeed": "true"})
    start = DeltaTable(table).latest_version() + 1
    run_update(spark, table, "id = 1", {"qty": "qty + 8"})
    src = source(tmp_path, "m", [{"id": 2, "ts": ts(2, 0), "price": 2, "qty": 50}, {"id": 41, "ts": ts(6, 1), "price": 3, "qty": 3}])
    clauses = [{"when": "matched", "update": {"qty": "s.qty"}}, {"when": "not_matched", "insert": "*"}]
    run_merge(spark, table, src, "t.id = s.id", clauses)
    feed = deltalake.DeltaTable(table).load_cdf(starting_version=start)
    rows = pa.RecordBatchReader.from_stream(feed).read_all().to_pylist()
    got = sorted((r["id"], r["_change_type"], r["total"]) for r in rows)
    assert got == [
        (1, "update_postimage", 10),
        (1, "update_preimage", 2),
        (2, "update_postimage", 100),
        (2, "update_preimage", 4),
        (41, "insert", 9),
    ]
    assert (2, 100, dt.date(2024, 1, 3)) in rs_rows(table)
