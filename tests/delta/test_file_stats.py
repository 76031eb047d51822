"""Stats from parquet footers; files are written with pyarrow, no Spark needed."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.file_stats import (
    file_stats,
    stats_json,
    truncate_max_string,
    truncate_min_string,
)
from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
from airflow_delta_provider.delta.schema.fields import stats_leaves


def _stats(tmp_path, table: pa.Table, partition_columns=(), configuration=None, **write_kwargs):
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, **write_kwargs)
    schema = from_arrow_schema(table.schema)
    return json.loads(stats_json(file_stats(path, stats_leaves(schema, partition_columns, configuration))))


def test_numeric_date_timestamp_bounds_over_row_groups(tmp_path):
    t = pa.table(
        {
            "i": pa.array([5, None, -3, 9], pa.int32()),
            "d": [1.5, 2.5, -0.5, None],
            "day": [dt.date(2020, 1, 3), dt.date(2019, 5, 1), None, dt.date(2021, 1, 1)],
            "ts": pa.array(
                [dt.datetime(2020, 1, 1, 0, 0, 0, 999999), None, dt.datetime(1969, 12, 31, 23, 59, 59, 1500), None],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    s = _stats(tmp_path, t, row_group_size=2)
    assert s["numRecords"] == 4
    assert s["minValues"] == {"i": -3, "day": "2019-05-01", "ts": "1969-12-31T23:59:59.001Z"}
    # The max is floored to milliseconds: readers add one millisecond.
    assert s["maxValues"] == {"i": 9, "day": "2021-01-01", "ts": "2020-01-01T00:00:00.999Z"}
    assert s["nullCount"] == {"i": 1, "d": 1, "day": 1, "ts": 2}


def test_decimals_are_exact_json_numbers(tmp_path):
    t = pa.table(
        {"m": pa.array([decimal.Decimal("12345678901234567890.12"), decimal.Decimal("-0.05")], pa.decimal128(22, 2))}
    )
    path = tmp_path / "f.parquet"
    pq.write_table(t, path)
    text = stats_json(file_stats(str(path), stats_leaves(from_arrow_schema(t.schema))))
    assert '"m":-0.05' in text and '"m":12345678901234567890.12' in text


def test_strings_are_truncated_with_a_tie_breaker(tmp_path):
    long_a = "a" * 40
    long_z = "z" * 31 + "\u00e9" * 5
    s = _stats(tmp_path, pa.table({"s": [long_a, long_z, "m"]}))
    assert s["minValues"]["s"] == "a" * 32
    max_ = s["maxValues"]["s"]
    assert max_.startswith("z" * 31) and max_ >= long_z
    assert max_.encode() >= long_z.encode()


def test_truncation_rules():
    assert truncate_min_string("abc", 2) == "ab"
    assert truncate_max_string("abc", 2) == "ab\x7f"
    assert truncate_max_string("ab\u00ff", 2) == "ab\U0010ffff"
    assert truncate_max_string("short", 32) == "short"


def test_types_without_bounds_get_null_counts_only_and_nested_stats_nest(tmp_path):
    t = pa.table(
        {
            "b": [True, None],
            "bin": [b"x", b"y"],
            "st": pa.array([{"x": 1, "y": "q"}, None]),
            "arr": pa.array([[1], None]),
        }
    )
    s = _stats(tmp_path, t)
    assert "b" not in s["minValues"] and "bin" not in s["maxValues"]
    assert s["nullCount"]["b"] == 1 and s["nullCount"]["bin"] == 0
    assert s["minValues"]["st"] == {"x": 1, "y": "q"}
    assert s["nullCount"]["st"] == {"x": 1, "y": 1}
    assert "arr" not in s["nullCount"]


def test_all_null_column_has_no_bounds(tmp_path):
    s = _stats(tmp_path, pa.table({"a": pa.array([None, None], pa.int64()), "k": [1, 2]}))
    assert "a" not in s["minValues"] and s["nullCount"]["a"] == 2


def test_missing_stats_omit_bounds(tmp_path):
    s = _stats(tmp_path, pa.table({"a": [1, 2]}), write_statistics=False)
    assert s["numRecords"] == 2
    assert "minValues" not in s and "nullCount" not in s


def test_partition_columns_and_indexed_column_limit(tmp_path):
    t = pa.table({"p": [1], "a": [1], "b": [2], "c": [3]})
    s = _stats(tmp_path, t, ["p"], {"delta.dataSkippingNumIndexedCols": "2"})
    assert s["minValues"] == {"a": 1, "b": 2}
    s = _stats(tmp_path, t, ["p"], {"delta.dataSkippingStatsColumns": "c"})
    assert s["minValues"] == {"c": 3}


def test_column_absent_from_file_counts_as_all_null(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), path)
    schema = from_arrow_schema(pa.schema([("a", pa.int64()), ("new", pa.string())]))
    s = file_stats(path, stats_leaves(schema))
    assert s["nullCount"] == {"a": 0, "new": 2}


def test_floats_get_null_counts_but_no_bounds(tmp_path):
    # The footer max ignores NaN, which Spark sorts above every number.
    s = _stats(tmp_path, pa.table({"f": [1.0, float("nan"), None]}))
    assert "f" not in s.get("maxValues", {})
    assert s["nullCount"]["f"] == 1


def test_timestamp_ntz_bounds_have_no_zone(tmp_path):
    t = pa.table(
        {
            "ntz": pa.array(
                [dt.datetime(2020, 1, 1, 0, 0, 0, 999999), None, dt.datetime(1969, 12, 31, 23, 59, 59, 1500)],
                pa.timestamp("us"),
            ),
            "old": pa.array([dt.datetime(5, 1, 2, 3, 4, 5, 6000)], pa.timestamp("us")).take([0, 0, 0]),
        }
    )
    s = _stats(tmp_path, t, row_group_size=2)
    assert s["minValues"] == {"ntz": "1969-12-31T23:59:59.001", "old": "0005-01-02T03:04:05.006"}
    assert s["maxValues"] == {"ntz": "2020-01-01T00:00:00.999", "old": "0005-01-02T03:04:05.006"}
    assert s["nullCount"] == {"ntz": 1, "old": 0}


def test_timestamps_beyond_year_9999_get_no_bounds(tmp_path):
    """Spark holds timestamps up to year 294247; the stats text cannot: the
    bounds are left out (legal), the null count stays."""
    beyond = 253402300800 * 10**6 * 2  # about year 12000, in microseconds
    t = pa.table({c: pa.array([beyond, 0], pa.timestamp("us", tz=tz)) for c, tz in (("ntz", None), ("ts", "UTC"))})
    s = _stats(tmp_path, t)
    assert "minValues" not in s and "maxValues" not in s
    assert s["nullCount"] == {"ntz": 0, "ts": 0}


@pytest.mark.parametrize("table", ["data-reader-timestamp_ntz", "parquet-all-types"])
def test_timestamp_ntz_stats_match_what_delta_spark_logged(golden_dir, table):
    """delta-spark's own stats for the golden tables' files, recomputed from the footers."""
    from airflow_delta_provider.delta.table import DeltaTable

    snap = DeltaTable(str(golden_dir / table)).snapshot()
    leaves = [(p, t) for p, t in stats_leaves(snap.schema, snap.partition_columns) if t == "timestamp_ntz"]
    assert leaves
    for add in snap.files:
        ours, theirs = file_stats(snap.file_path(add), leaves), json.loads(add.stats)
        for (name,), _ in leaves:
            for kind in ("minValues", "maxValues", "nullCount"):
                assert ours.get(kind, {}).get(name) == theirs[kind].get(name), (add.path, kind)
