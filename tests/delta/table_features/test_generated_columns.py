"""Tests for delta/generated_columns.py: which columns are generated, and
partition pruning through a partition column generated from a data column
(delta-spark's OptimizablePartitionExpression), in the pure-Python skipper."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files
from airflow_delta_provider.delta.table_features.generated_columns import (
    PartitionDerivation,
    derived_comparison,
    generation_expressions,
    partition_derivations,
)

UTC = dt.timezone.utc


def schema(**generated: tuple[str, str]) -> dict:
    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    ]
    for name, (dtype, expr) in generated.items():
        fields.append({"name": name, "type": dtype, "nullable": True, "metadata": {"delta.generationExpression": expr}})
    return {"type": "struct", "fields": fields}


def test_generation_expressions_are_read_from_field_metadata():
    s = schema(d=("date", "CAST(ts AS DATE)"))
    assert generation_expressions(s) == {"d": "CAST(ts AS DATE)"}
    assert generation_expressions(schema()) == {}


@pytest.mark.parametrize(
    "expr, kind",
    [
        ("CAST(ts AS DATE)", "date"),
        ("cast(`ts` as date)", "date"),
        ("to_date(ts)", "date"),
        ("year(ts)", "year"),
        ("YEAR(ts)", "year"),
        ("month(ts)", "month"),
        ("day(ts)", "day"),
        ("dayofmonth(ts)", "day"),
        ("hour(ts)", "hour"),
        ("ts", "identity"),
    ],
)
def test_recognised_partition_expressions(expr, kind):
    s = schema(p=("date", expr))
    assert partition_derivations(s, ["p"]) == [PartitionDerivation("p", "ts", kind)]


@pytest.mark.parametrize(
    "expr", ["date_format(ts, 'yyyy-MM')", "year(ts) + 1", "CAST(ts AS STRING)", "id % 10", "hour(to_date(ts))"]
)
def test_other_expressions_are_not_used(expr):
    assert partition_derivations(schema(p=("string", expr)), ["p"]) == []


def test_a_data_column_generated_from_a_data_column_is_not_a_derivation():
    assert partition_derivations(schema(d=("date", "CAST(ts AS DATE)")), []) == []


def test_derived_comparisons():
    ts = dt.datetime(2024, 1, 2, 10, 0, tzinfo=UTC)
    assert derived_comparison("date", "timestamp", ">", ts, UTC) == (">=", dt.date(2024, 1, 2))
    assert derived_comparison("date", "timestamp", "<", ts, UTC) == ("<=", dt.date(2024, 1, 2))
    assert derived_comparison("year", "timestamp", ">=", ts, UTC) == (">=", 2024)
    assert derived_comparison("month", "timestamp", "=", ts, UTC) == ("=", 1)
    assert derived_comparison("month", "timestamp", ">", ts, UTC) is None  # not monotonic
    assert derived_comparison("hour", "timestamp", "<=>", ts, UTC) == ("=", 10)
    assert derived_comparison("date", "timestamp", "!=", ts, UTC) is None
    # the session time zone decides the date of a timestamp, as in Spark
    la = dt.timezone(dt.timedelta(hours=-8))
    assert derived_comparison("date", "timestamp", "=", ts.replace(hour=3), la) == ("=", dt.date(2024, 1, 1))


def _files(partition: str, values: list[str]) -> list[AddFile]:
    return [AddFile(f"{partition}={v}/f.parquet", {partition: v}, 1, 0) for v in values]


def test_a_timestamp_filter_prunes_by_its_generated_date_partition():
    s = schema(d=("date", "CAST(ts AS DATE)"))
    files = _files("d", ["2024-01-01", "2024-01-02", "2024-01-03"])
    kept = prune_files(files, Predicate.parse("ts >= '2024-01-02 10:00:00'"), s, ["d"])
    assert [f.partition_values["d"] for f in kept] == ["2024-01-02", "2024-01-03"]
    kept = prune_files(files, Predicate.parse("ts < '2024-01-02 00:00:00'"), s, ["d"])
    assert [f.partition_values["d"] for f in kept] == ["2024-01-01", "2024-01-02"]  # midnight: d <= 01-02
    kept = prune_files(files, Predicate.parse("ts = TIMESTAMP '2024-01-03 12:00:00'"), s, ["d"])
    assert [f.partition_values["d"] for f in kept] == ["2024-01-03"]
    # NOT keeps what might match: the derived bound changes no row's truth value
    kept = prune_files(files, Predicate.parse("NOT (ts >= '2024-01-02 10:00:00')"), s, ["d"])
    assert len(kept) == 3
    kept = prune_files(files, Predicate.parse("ts >= '2024-01-02' OR id = 1"), s, ["d"])
    assert len(kept) == 3  # the OR with a data column keeps every file


def test_year_month_day_hour_and_identity_partitions():
    y = schema(y=("integer", "year(ts)"))
    kept = prune_files(_files("y", ["2022", "2023", "2024"]), Predicate.parse("ts > '2023-06-01'"), y, ["y"])
    assert [f.partition_values["y"] for f in kept] == ["2023", "2024"]
    m = schema(m=("integer", "month(ts)"))
    files = _files("m", ["1", "2", "3"])
    kept = prune_files(files, Predicate.parse("ts = '2024-02-10 08:00:00'"), m, ["m"])
    assert [f.partition_values["m"] for f in kept] == ["2"]
    assert len(prune_files(files, Predicate.parse("ts > '2024-02-10'"), m, ["m"])) == 3  # equality only
    h = schema(h=("integer", "hour(ts)"))
    kept = prune_files(_files("h", ["7", "8"]), Predicate.parse("ts = '2024-02-10 08:30:00'"), h, ["h"])
    assert [f.partition_values["h"] for f in kept] == ["8"]
    d = schema(dd=("integer", "day(ts)"))
    kept = prune_files(_files("dd", ["9", "10"]), Predicate.parse("ts <=> '2024-02-10 08:30:00'"), d, ["dd"])
    assert [f.partition_values["dd"] for f in kept] == ["10"]
    ident = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "k", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "id"}},
        ],
    }
    kept = prune_files(_files("k", ["1", "5", "9"]), Predicate.parse("id BETWEEN 4 AND 6"), ident, ["k"])
    assert [f.partition_values["k"] for f in kept] == ["5"]


def test_the_hour_of_a_date_is_not_the_hour_of_its_timestamp():
    """hour(to_date(ts)) is 0 for every row: a filter on ts says nothing about it."""
    h = schema(h=("integer", "hour(to_date(ts))"))
    files = _files("h", ["0"])
    assert prune_files(files, Predicate.parse("ts = '2024-02-10 08:30:00'"), h, ["h"]) == files


def test_null_partition_values_are_pruned_only_when_the_source_comparison_cannot_hold():
    s = schema(d=("date", "CAST(ts AS DATE)"))
    files = [AddFile("d=__HIVE_DEFAULT_PARTITION__/f.parquet", {"d": None}, 1, 0)]
    assert prune_files(files, Predicate.parse("ts >= '2024-01-02'"), s, ["d"]) == []  # NULL ts: never true
    assert prune_files(files, Predicate.parse("ts IS NULL"), s, ["d"]) == files


def test_a_column_a_generated_column_reads_cannot_be_dropped_or_renamed(tmp_path):
    """ALTER (core) refuses what would leave a generation expression dangling; nothing is committed."""
    from airflow_delta_provider.delta.actions.model import Metadata, Protocol
    from airflow_delta_provider.delta.errors import InvalidInputError
    from airflow_delta_provider.delta.schema.types import schema_string
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.alter.plan import DropColumns, RenameColumn, alter_table

    table = DeltaTable(str(tmp_path / "t"))
    txn = table.transaction("CREATE TABLE", {}, None)
    configuration = {"delta.columnMapping.mode": "name"}
    from airflow_delta_provider.delta.table_features import column_mapping

    md = Metadata.new(schema_string(schema(d=("date", "CAST(ts AS DATE)"))), [], configuration, created_time=0)
    txn.update_metadata(column_mapping.apply(md, None))
    txn.update_protocol(Protocol(2, 5))
    txn.commit()
    for change in (DropColumns(("ts",)), RenameColumn("ts", "when")):
        with pytest.raises(InvalidInputError, match=r"generated column d \(CAST\(ts AS DATE\)\) reads column\(s\) ts"):
            alter_table(table, change)
    assert table.latest_version() == 0
    alter_table(table, DropColumns(("d",)))  # the generated column itself may go
    assert [f["name"] for f in table.snapshot().schema["fields"]] == ["id", "ts"]
