"""APPEND's and MERGE's source: a SQL query over views (parquet, csv, json,
orc, Delta at a version), and ORC files.

Each result is checked against rows computed independently (pyarrow), and
read back by delta-rs and DuckDB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.merge.spec import MergeSpec
from tests.operations.runs import run_append, run_merge
from tests.spark.conftest import disk_files, table_rows

ORDERS = pa.table(
    {
        "id": pa.array(range(8), pa.int64()),
        "customer": pa.array([1, 2, 3, 1, 2, 3, 1, 9], pa.int64()),
        "amount": pa.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]),
        "ds": ["2024-01-01"] * 4 + ["2024-01-02"] * 4,
    }
)
CUSTOMERS = pa.table({"customer": pa.array([1, 2, 3], pa.int64()), "region": ["north", "south", "east"]})
UPSERT_JSON = json.dumps([{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}])
JOIN = "SELECT o.id, o.amount, c.region, o.ds FROM orders o JOIN customers c USING (customer)"


def _views(tmp_path: Path) -> dict:
    """The orders as parquet, the customers as a CSV with a header."""
    (tmp_path / "orders").mkdir()
    pq.write_table(ORDERS, str(tmp_path / "orders" / "part-0.parquet"))
    pcsv.write_csv(CUSTOMERS, str(tmp_path / "customers.csv"))
    return {
        "orders": {"path": str(tmp_path / "orders"), "format": "parquet"},
        "customers": {"path": str(tmp_path / "customers.csv"), "format": "csv",
                      "options": {"header": "true", "inferSchema": "true"}},
    }  # fmt: skip


def _joined(where=lambda row: True) -> list[tuple]:
    """The join, computed with pyarrow: an independent expectation."""
    regions = dict(zip(CUSTOMERS["customer"].to_pylist(), CUSTOMERS["region"].to_pylist()))
    rows = [
        (r["id"], r["amount"], regions[r["customer"]], r["ds"])
        for r in ORDERS.to_pylist()
        if r["customer"] in regions and where(r)
    ]
    return sorted(rows, key=repr)


def _temp_views(spark) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


def test_a_query_over_parquet_and_csv_views_is_appended(spark, tmp_path, duckdb_delta):
    path = str(tmp_path / "enriched")
    result = run_append(spark, path, source_sql=JOIN, source_views=json.dumps(_views(tmp_path)), partition_by=["ds"])

    assert result.version == 0 and result.metrics["numOutputRows"] == 7
    assert table_rows(path, ["id", "amount", "region", "ds"]) == _joined()
    duck = duckdb_delta.execute(f"SELECT id, amount, region, ds FROM delta_scan('{path}')").fetchall()
    assert sorted(duck, key=repr) == _joined()
    assert not {"orders", "customers"} & _temp_views(spark)  # the views lived for the command only


def test_a_delta_view_is_read_at_its_version_and_reloads_an_interval(spark, tmp_path, make_table):
    """The day is reloaded from the orders table as of version 0, whatever came after."""
    orders = make_table(ORDERS, "orders_table")
    from deltalake import write_deltalake

    write_deltalake(orders, ORDERS.slice(0, 2), mode="append")  # version 1: duplicates the view must not see
    target = str(tmp_path / "target")
    views = _views(tmp_path)
    views["orders"] = {"path": orders, "format": "delta", "version": 0}
    run_append(spark, target, source_sql=JOIN, source_views=views, partition_by=["ds"])
    # The day again, from the same query: the reload replaces it, in one commit.
    day = JOIN + " WHERE o.ds = '2024-01-02'"
    result = run_append(
        spark, target, source_sql=day, source_views=views, mode="overwrite", replace_where="ds = '2024-01-02'"
    )

    assert result.version == 1
    assert table_rows(target, ["id", "amount", "region", "ds"]) == _joined()
    assert DeltaTable(target).history(limit=1)[0]["operationParameters"]["predicate"] == "ds = '2024-01-02'"


def test_merge_takes_a_query_as_its_source(spark, tmp_path, make_table):
    """The newest change per key, picked by the query, is merged."""
    target = make_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}), "target")
    changes = pa.table(
        {"id": pa.array([2, 2, 4, 4], pa.int64()), "v": ["b1", "b2", "d1", "d2"], "seq": pa.array([1, 2, 1, 2])}
    )
    pq.write_table(changes, str(tmp_path / "changes.parquet"))
    latest = "SELECT id, v FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS n FROM changes) WHERE n = 1"
    views = {"changes": {"path": str(tmp_path / "changes.parquet"), "format": "parquet"}}
    clauses = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]

    result = run_merge(spark, target, None, "t.id = s.id", clauses, source_sql=latest, source_views=views)

    assert result.metrics["numTargetRowsUpdated"] == 1 and result.metrics["numTargetRowsInserted"] == 1
    assert table_rows(target) == [(1, "a"), (2, "b2"), (3, "c"), (4, "d2")]
    assert "changes" not in _temp_views(spark)


def test_orc_is_a_source_format_of_append_and_of_a_view(spark, tmp_path, duckdb_delta):
    porc.write_table(ORDERS, str(tmp_path / "orders.orc"))
    direct, viewed = str(tmp_path / "direct"), str(tmp_path / "viewed")
    run_append(spark, direct, str(tmp_path / "orders.orc"), format="orc")
    views = {"o": {"path": str(tmp_path / "orders.orc"), "format": "orc"}}
    run_append(spark, viewed, source_sql="SELECT * FROM o WHERE amount > 35", source_views=views)

    expected = sorted((tuple(r.values()) for r in ORDERS.to_pylist()), key=repr)
    assert table_rows(direct) == expected
    assert table_rows(viewed) == [r for r in expected if r[2] > 35]
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{viewed}')").fetchone()[0] == 5


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT * FROM nowhere", "TABLE_OR_VIEW_NOT_FOUND"),
        ("SELEC id FROM orders", "PARSE_SYNTAX_ERROR"),
        ("SELECT o.missing FROM orders o", "UNRESOLVED_COLUMN"),
    ],
)
def test_an_invalid_query_fails_with_sparks_one_line_and_writes_nothing(spark, tmp_path, make_table, sql, message):
    target = make_table(pa.table({"id": pa.array([1], pa.int64())}), "target")
    before, views = disk_files(target), _views(tmp_path)
    with pytest.raises(InvalidInputError, match=message) as caught:
        run_append(spark, target, source_sql=sql, source_views=views)
    assert str(caught.value).startswith("invalid source_sql") and "\n" not in str(caught.value)
    with pytest.raises(InvalidInputError, match=message):
        run_merge(spark, target, None, "t.id = s.id", [{"when": "not_matched", "insert": "*"}], source_sql=sql,
                  source_views=views)  # fmt: skip
    assert disk_files(target) == before
    assert not {"orders", "customers"} & _temp_views(spark)  # dropped after a failure too


@pytest.mark.parametrize(
    "views, message",
    [
        ('{"o": {"path": "/x"}}', "format must be one of"),
        ('{"o": {"path": "/x", "format": "parquet", "version": 1}}', "a version needs format delta"),
        ('{"1o": {"path": "/x", "format": "parquet"}}', "view name '1o'"),
        ('{"o": {"path": "/x", "format": "parquet", "schema": "a int"}}', "unknown key"),
        ("[1]", "must map view names"),
    ],
)
def test_bad_views_are_refused_before_anything_is_read(spark, tmp_path, views, message):
    target = str(tmp_path / "target")
    with pytest.raises(InvalidInputError, match=message):
        run_append(spark, target, source_sql="SELECT 1 AS id", source_views=views)
    assert not Path(target).exists()


def test_a_source_is_a_path_or_a_query():
    """The specs check it, before a Source is made."""
    with pytest.raises(InvalidInputError, match="exactly one"):
        MergeSpec(table_path="/t", source="/x", source_sql="SELECT 1", on="t.id = s.id", clauses=UPSERT_JSON)
    with pytest.raises(InvalidInputError, match="exactly one"):
        MergeSpec(table_path="/t", on="t.id = s.id", clauses=UPSERT_JSON)
    with pytest.raises(InvalidInputError, match="a source version needs a delta source"):
        MergeSpec(
            table_path="/t", source="/x", source_format="csv", source_version=3, on="t.id = s.id", clauses=UPSERT_JSON
        )


def test_a_query_source_on_every_backend(spark, tmp_path, backend):
    """The table and the views' files on the store (arrow I/O there): the rows the local run gives."""
    from tests.storage_servers import upload_tree

    local = _views(tmp_path)
    views = {"orders": dict(local["orders"])}
    if backend.name != "local":
        views["orders"]["path"] = backend.uri("orders")
        upload_tree(tmp_path / "orders", views["orders"]["path"], backend.storage_options)
    sql = "SELECT id, amount * 2 AS doubled FROM orders WHERE ds = '2024-01-01'"
    uri = backend.uri("doubled") if backend.name != "local" else str(tmp_path / "doubled")
    options = backend.storage_options or None
    result = run_append(spark, uri, source_sql=sql, source_views=views, storage_options=options)

    assert result.version == 0
    import deltalake

    rows = deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["doubled"]) for r in rows) == [(0, 20.0), (1, 40.0), (2, 60.0), (3, 80.0)]
