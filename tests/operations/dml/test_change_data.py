"""Change data: UPDATE, DELETE and MERGE write ``cdc`` files on a table with
``delta.enableChangeDataFeed``, and the changes read back through our
reader equal what delta-rs (``load_cdf``) reads, row for row and change
type for change type."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.features import listed_features
from airflow_delta_provider.spark.read.table_changes import read_changes
from tests.operations.runs import run_append, run_delete, run_merge, run_update
from tests.spark.change_data_feed_support import CDF, DV, cdc_actions, cdf_table, ours, rs_changes, source, theirs


@pytest.mark.parametrize(
    "properties, partition_by",
    [
        pytest.param({}, None, id="copy-on-write"),
        pytest.param({}, ["part"], id="partitioned"),
        pytest.param(DV, None, id="deletion-vectors"),
        pytest.param({"delta.columnMapping.mode": "name"}, ["part"], id="column-mapping"),
    ],
)
def test_update_and_delete_record_their_changes_as_delta_rs_reads_them(
    spark, tmp_path, properties, partition_by, duckdb_delta
):
    path = cdf_table(spark, tmp_path, properties, partition_by)
    assert "changeDataFeed" in listed_features(DeltaTable(path).snapshot().protocol)[1]
    v_update = run_update(spark, path, "id <= 3", {"amount": "amount + 1"}).version
    v_delete = run_delete(spark, path, "amount >= 90").version
    assert cdc_actions(path, v_update) and cdc_actions(path, v_delete)
    assert all(a["path"].startswith("_change_data/") and a["dataChange"] is False for a in cdc_actions(path, v_update))

    got = ours(spark, path, 0)
    if "delta.columnMapping.mode" in properties:  # delta-rs reads no change data of such tables
        written = pq.read_schema(next(Path(path, "_change_data").rglob("*.parquet"))).names
        physical = DeltaTable(path).snapshot().column_mapping.physical_column("amount")
        assert physical in written and "amount" not in written and "_change_type" in written
    else:
        assert got == theirs(path, 0)
    by_type = {t: sorted((r[0], r[2]) for r in got if r[3] == t) for t in {r[3] for r in got}}
    assert by_type["update_preimage"] == [(1, 10), (2, 20), (3, 30)]
    assert by_type["update_postimage"] == [(1, 11), (2, 21), (3, 31)]
    assert by_type["delete"] == [(9, 90), (10, 100)]
    assert len(by_type["insert"]) == 10  # version 0: derived from its adds
    # DuckDB reads the table the changes left.
    rows = duckdb_delta.execute(f"SELECT id, amount FROM delta_scan('{path}') ORDER BY id").fetchall()
    assert rows == [(1, 11), (2, 21), (3, 31)] + [(i, i * 10) for i in range(4, 9)]


def test_a_whole_file_delete_records_its_rows_through_the_removes(spark, tmp_path):
    path = cdf_table(spark, tmp_path, partition_by=["part"])
    version = run_delete(spark, path, "part = 'a'").version
    assert cdc_actions(path, version) == []  # as delta-spark: the removes say it
    got = ours(spark, path, version)
    assert got == theirs(path, version)
    assert sorted(r[0] for r in got) == [1, 3, 5, 7, 9] and {r[3] for r in got} == {"delete"}


def test_merge_records_inserts_updates_and_deletes(spark, tmp_path):
    path = cdf_table(spark, tmp_path)
    src = source(tmp_path, "src", [(1, "a", 0), (2, "b", 200), (50, "a", 500)])
    clauses = json.dumps(
        [
            {"when": "matched", "condition": "s.amount = 0", "delete": True},
            {"when": "matched", "update": {"amount": "s.amount"}},
            {"when": "not_matched", "insert": "*"},
        ]
    )
    version = run_merge(spark, path, src, on="t.id = s.id", clauses=clauses).version
    assert cdc_actions(path, version)
    got = ours(spark, path, version)
    assert got == theirs(path, version)
    assert sorted((r[0], r[2], r[3]) for r in got) == [
        (1, 10, "delete"),
        (2, 20, "update_preimage"),
        (2, 200, "update_postimage"),
        (50, 500, "insert"),
    ]


def test_append_writes_no_change_files(spark, tmp_path):
    path = cdf_table(spark, tmp_path)
    version = run_append(spark, path, source(tmp_path, "more", [(11, "a", 110)]), format="parquet").version
    assert cdc_actions(path, version) == []
    assert ours(spark, path, version) == theirs(path, version) == [(11, "a", 110, "insert", version)]


def test_the_golden_change_data_feed_table_accepts_writes(spark, golden_copy):
    """``commit-info-containing-arbitrary-operationParams-types``: delta-spark's
    writer-7 table with ``changeDataFeed`` on."""
    path = golden_copy("commit-info-containing-arbitrary-operationParams-types")
    before = DeltaTable(path).snapshot()
    column = before.schema["fields"][0]["name"]
    version = run_update(spark, path, None, {column: column}).version
    assert version == before.version + 1 and cdc_actions(path, version)
    assert ours_any(spark, path, version) == theirs_any(path, version)


def ours_any(spark, path: str, version: int) -> list[tuple]:
    frame = read_changes(spark, path, version).frame.drop("_commit_timestamp")
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def theirs_any(path: str, version: int) -> list[tuple]:
    from deltalake import DeltaTable as RsTable

    table = rs_changes(RsTable(path), version)
    columns = [c for c in table.column_names if c != "_commit_timestamp"]
    return sorted((tuple(r.values()) for r in table.select(columns).to_pylist()), key=repr)


@pytest.mark.parametrize(
    "clauses, expected",
    [
        pytest.param(
            [{"when": "not_matched_by_source", "condition": "t.id > 8", "delete": True},
             {"when": "not_matched_by_source", "update": {"amount": "-1"}}],
            {"delete": [(9, 90), (10, 100)], "update_preimage": [(i, i * 10) for i in range(3, 9)],
             "update_postimage": [(i, -1) for i in range(3, 9)]},
            id="not-matched-by-source",
        ),
        pytest.param(
            [{"when": "matched", "delete": True}],
            {"delete": [(1, 10), (2, 20)]},
            id="several-matches-all-deleting",
        ),
    ],
)  # fmt: skip
def test_merge_records_changes_on_every_path(spark, tmp_path, clauses, expected):
    path = cdf_table(spark, tmp_path)
    src = source(tmp_path, "src", [(1, "a", 0), (2, "b", 0), (2, "b", 1)])  # id 2 matched twice
    version = run_merge(spark, path, src, on="t.id = s.id", clauses=json.dumps(clauses)).version
    got = ours(spark, path, version)
    assert got == theirs(path, version)
    assert {t: sorted((r[0], r[2]) for r in got if r[3] == t) for t in {r[3] for r in got}} == expected


@pytest.mark.parametrize("expression", ["rand()", "uuid()", "current_timestamp()"])
def test_values_that_two_queries_could_see_differently_are_refused(spark, tmp_path, expression):
    """The data and the change rows are written by two Spark queries: their new values must agree."""
    path = cdf_table(spark, tmp_path)
    before = DeltaTable(path).latest_version()
    with pytest.raises(InvalidInputError, match=r"may differ between the data and the change rows"):
        run_update(spark, path, "id = 1", {"part": f"cast({expression} as string)"})
    src = source(tmp_path, "src", [(1, "a", 0)])
    clauses = json.dumps([{"when": "matched", "update": {"part": f"cast({expression} as string)"}}])
    with pytest.raises(InvalidInputError, match=r"may differ between the data and the change rows"):
        run_merge(spark, path, src, on="t.id = s.id", clauses=clauses)
    assert DeltaTable(path).latest_version() == before


def test_the_feed_cannot_be_turned_on_over_a_column_of_its_own_name(spark, tmp_path):
    path = str(tmp_path / "t")
    folder = tmp_path / "src"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1], "_change_type": ["x"]}), folder / "a.parquet")
    with pytest.raises(InvalidInputError, match="'_change_type' is reserved"):
        run_append(spark, path, str(folder), format="parquet", table_properties=CDF)
    assert not (tmp_path / "t" / "_delta_log").exists() or not list((tmp_path / "t" / "_delta_log").glob("*.json"))
