"""The change data feed: UPDATE, DELETE and MERGE write ``cdc`` files on a
table with ``delta.enableChangeDataFeed``, and the changes read back through
our reader equal what delta-rs (``load_cdf``) reads, row for row and change
type for change type."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import ChangeDataUnavailableError, InvalidInputError
from airflow_delta_provider.delta.table_features.features import listed_features
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.write.change_data import read_changes
from airflow_delta_provider.spark.commands.alter import run_alter
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.merge.command import run_merge
from airflow_delta_provider.spark.commands.update import run_update

from .arrow_support import arrow_workers  # noqa: F401 - the fixture

CDF = {"delta.enableChangeDataFeed": "true"}
DV = {"delta.enableDeletionVectors": "true"}


def source(tmp_path: Path, name: str, rows: list[tuple[int, str, int]]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    ids, parts, amounts = zip(*rows) if rows else ((), (), ())
    data = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(parts, pa.string()),
            "amount": pa.array(amounts, pa.int64()),
        }
    )
    pq.write_table(data, folder / "a.parquet")
    return str(folder)


def cdf_table(spark, tmp_path: Path, properties: dict | None = None, partition_by=None) -> str:
    path = str(tmp_path / "t")
    seed = source(tmp_path, "seed", [(i, "a" if i % 2 else "b", i * 10) for i in range(1, 11)])
    run_append(
        spark, path, seed, format="parquet", partition_by=partition_by, table_properties={**CDF, **(properties or {})}
    )
    return path


def ours(spark, path: str, start: int, end: int | None = None) -> list[tuple]:
    frame = read_changes(spark, path, start, end).frame
    rows = frame.select("id", "part", "amount", "_change_type", "_commit_version").collect()
    return sorted((tuple(r) for r in rows), key=repr)


def theirs(path: str, start: int, end: int | None = None) -> list[tuple]:
    from deltalake import DeltaTable as RsTable

    table = rs_changes(RsTable(path), start, end)
    rows = table.select(["id", "part", "amount", "_change_type", "_commit_version"]).to_pylist()
    return sorted((tuple(r.values()) for r in rows), key=repr)


def rs_changes(table, start: int, end: int | None = None) -> pa.Table:
    """delta-rs's change data feed as a pyarrow table."""
    return pa.RecordBatchReader.from_stream(table.load_cdf(starting_version=start, ending_version=end)).read_all()


def cdc_actions(path: str, version: int) -> list[dict]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line)["cdc"] for line in text.splitlines() if '"cdc"' in line]


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


def test_a_range_that_is_not_recorded_is_refused_by_name(spark, tmp_path):
    path = str(tmp_path / "t")
    run_append(spark, path, source(tmp_path, "seed", [(1, "a", 1)]), format="parquet")
    run_alter(spark, path, {"set_properties": CDF})  # version 1
    run_update(spark, path, None, {"amount": "2"})  # version 2
    with pytest.raises(ChangeDataUnavailableError, match="not recorded for version 0"):
        read_changes(spark, path, 0)
    assert ours(spark, path, 1) == [(1, "a", 1, "update_preimage", 2), (1, "a", 2, "update_postimage", 2)]
    with pytest.raises(ChangeDataUnavailableError, match="after the latest version 2"):
        read_changes(spark, path, 3)
    with pytest.raises(ChangeDataUnavailableError, match="end version 9 is after"):
        read_changes(spark, path, 1, 9)
    with pytest.raises(InvalidInputError, match="before the start version"):
        read_changes(spark, path, 2, 1)
    (Path(path) / "_delta_log" / f"{0:020d}.json").unlink()  # log cleanup took version 0
    (Path(path) / "_delta_log" / f"{1:020d}.json").rename(Path(path) / "_delta_log" / "keep")
    with pytest.raises(ChangeDataUnavailableError, match="version 1 .* no longer in the log"):
        read_changes(spark, path, 1)


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


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_changes_are_written_to_a_folder_with_the_rows_per_change_type(spark, tmp_path, io, request):
    if io == "arrow":
        request.getfixturevalue("arrow_workers")
    from airflow_delta_provider.delta.table_changes import read_summary
    from airflow_delta_provider.spark.commands.changes import run_changes

    path = cdf_table(spark, tmp_path, {"delta.enableDeletionVectors": "true"} if io == "arrow" else {})
    run_update(spark, path, "id = 1", {"amount": "0"}, io=io)
    run_delete(spark, path, "id = 2", io=io)
    output = tmp_path / "out"
    run_changes(spark, path, 1, 1, str(output), io=io)  # an earlier try
    (output / "stale.parquet").write_bytes(b"left by a failed try")
    result = run_changes(spark, path, 1, None, str(output), io=io)
    assert (result.operation, result.version) == ("CHANGES", 2)
    assert result.metrics["changes"] == {"insert": 0, "delete": 1, "update_preimage": 1, "update_postimage": 1}
    written = pq.read_table(output)
    assert sorted(written["id"].to_pylist()) == [1, 1, 2] and not (output / "stale.parquet").exists()
    assert written.schema.names == ["id", "part", "amount", "_change_type", "_commit_version", "_commit_timestamp"]
    assert read_summary(str(output))["metrics"]["changes"] == result.metrics["changes"]
    if io == "hadoop":
        run_changes(spark, path, 1, 1, str(tmp_path / "csv"), "csv", io=io)
        assert (tmp_path / "csv").is_dir() and any(p.suffix == ".csv" for p in (tmp_path / "csv").iterdir())
    else:
        with pytest.raises(InvalidInputError, match="arrow I/O, which writes parquet only"):
            run_changes(spark, path, 1, 1, str(tmp_path / "csv"), "csv", io=io)


def test_an_output_folder_inside_the_table_or_of_another_table_is_refused(spark, tmp_path):
    from airflow_delta_provider.spark.commands.changes import run_changes

    path = cdf_table(spark, tmp_path)
    before = sorted(p.relative_to(path) for p in Path(path).rglob("*"))
    for output in (path, str(Path(path) / "changes"), str(tmp_path)):  # the table, inside it, holding it
        with pytest.raises(InvalidInputError, match="lies inside or holds the table"):
            run_changes(spark, path, 0, None, output)
    foreign = tmp_path / "reports"
    foreign.mkdir()
    (foreign / "q3.csv").write_text("keep me")
    with pytest.raises(InvalidInputError, match="files an earlier CHANGES run did not write"):
        run_changes(spark, path, 0, None, str(foreign))
    assert (foreign / "q3.csv").read_text() == "keep me"
    (tmp_path / "other").mkdir()
    other = cdf_table(spark, tmp_path / "other")
    with pytest.raises(InvalidInputError, match="holds a Delta table"):
        run_changes(spark, path, 0, None, other)
    assert sorted(p.relative_to(path) for p in Path(path).rglob("*")) == before


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


def test_commit_timestamps_are_the_in_commit_timestamps(spark, tmp_path):
    path = cdf_table(spark, tmp_path, {"delta.enableInCommitTimestamps": "true"})
    version = run_delete(spark, path, "id = 4").version
    (row,) = read_changes(spark, path, version).frame.collect()
    ict = DeltaTable(path).history(limit=1)[0]["inCommitTimestamp"]
    assert int(row["_commit_timestamp"].timestamp() * 1000) == ict


def test_a_range_of_no_data_change_is_empty_with_the_feed_columns(spark, tmp_path):
    path = cdf_table(spark, tmp_path)
    version = run_alter(spark, path, {"set_properties": {"delta.appendOnly": "false"}}).version
    frame = read_changes(spark, path, version).frame
    assert frame.count() == 0
    assert frame.columns == ["id", "part", "amount", "_change_type", "_commit_version", "_commit_timestamp"]
    assert ours(spark, path, version) == theirs(path, version) == []


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
