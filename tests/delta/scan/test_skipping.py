"""Tests for delta/scan/skipping.py: file pruning (condition parsing is tested in
tests/delta/expressions/test_parse.py).

DuckDB serves as the independent SQL oracle: it evaluates the same condition
on the real rows, and every file holding a matching row must survive pruning.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_delta_provider.delta.actions.model import AddFile, Metadata, parse_commit
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import decode_path, parse_partition_values
from airflow_delta_provider.delta.scan.skipping import Predicate, partition_filter, partition_matcher, prune_files
from airflow_delta_provider.delta.schema.arrow import to_arrow_type

duckdb = pytest.importorskip("duckdb")

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": name, "type": t, "nullable": True, "metadata": {}}
        for name, t in [
            ("id", "long"),
            ("Name", "string"),
            ("day", "date"),
            ("ts", "timestamp"),
            ("ntz", "timestamp_ntz"),
            ("amount", "decimal(10,2)"),
            ("score", "double"),
            ("p", "integer"),
            ("region", "string"),
            ("flag", "boolean"),
            ("s", "struct<a:int>"),
        ]
    ],
}
PARTS = ["p", "region"]


def add(path: str, stats: dict[str, Any] | None = None, **partitions: str | None) -> AddFile:
    pv = {"p": "1", "region": "eu"}
    pv.update(partitions)
    return AddFile(path, pv, 1, 0, stats=json.dumps(stats) if stats is not None else None)


def stats(n: int, lo: dict[str, Any], hi: dict[str, Any], nulls: dict[str, int]) -> dict[str, Any]:
    return {"numRecords": n, "minValues": lo, "maxValues": hi, "nullCount": nulls}


def kept(files: list[AddFile], condition: str, time_zone: str = "UTC") -> list[str]:
    return [f.path for f in prune_files(files, Predicate.parse(condition), SCHEMA, PARTS, time_zone=time_zone)]


# --- Operators on stats --------------------------------------------------------

TEN_TO_TWENTY = add("f", stats(5, {"id": 10}, {"id": 20}, {"id": 0}))
WITH_NULLS = add("n", stats(5, {"id": 10}, {"id": 20}, {"id": 2}))
ONLY_TEN = add("ten", stats(3, {"id": 10}, {"id": 10}, {"id": 0}))


@pytest.mark.parametrize(
    ("condition", "keep"),
    [
        ("id = 15", True),
        ("id = 9", False),
        ("id = 21", False),
        ("id < 10", False),
        ("id < 11", True),
        ("id <= 10", True),
        ("id <= 9", False),
        ("id > 20", False),
        ("id > 19", True),
        ("id >= 20", True),
        ("id >= 21", False),
        ("id != 15", True),
        ("id <> 15", True),
        ("id IN (1, 2, 30)", False),
        ("id IN (1, 12)", True),
        ("id NOT IN (12)", True),
        ("id BETWEEN 21 AND 30", False),
        ("id BETWEEN 5 AND 10", True),
        ("id NOT BETWEEN 10 AND 20", False),
        ("id NOT BETWEEN 11 AND 20", True),
        ("21 <= id", False),
        ("20 <= id", True),
        ("5 > id", False),
        ("id = -5", False),
        ("id = 15L", True),
        ("id = 15.5", True),
        ("id = 20.5", False),
        ("id = 21e0", False),
        ("id IS NULL", False),
        ("id IS NOT NULL", True),
        ("id <=> 15", True),
        ("id <=> 30", False),
        ("id <=> NULL", False),
        ("id = NULL", False),
        ("NOT (id = NULL)", False),
        ("NULL", False),
        ("false", False),
        ("true", True),
    ],
)
def test_each_operator_against_min_max(condition, keep):
    assert kept([TEN_TO_TWENTY], condition) == (["f"] if keep else [])


def test_not_equal_prunes_only_a_file_all_equal_to_the_literal():
    assert kept([ONLY_TEN, TEN_TO_TWENTY], "id != 10") == ["f"]
    assert kept([ONLY_TEN, TEN_TO_TWENTY], "NOT (id = 10)") == ["f"]
    assert kept([ONLY_TEN], "id NOT IN (10, NULL)") == []  # never true with a NULL in the list
    assert kept([ONLY_TEN], "id IN (10, NULL)") == ["ten"]


def test_null_counts():
    assert kept([WITH_NULLS, TEN_TO_TWENTY], "id IS NULL") == ["n"]
    assert kept([WITH_NULLS, TEN_TO_TWENTY], "id <=> NULL") == ["n"]
    assert kept([WITH_NULLS, TEN_TO_TWENTY], "NOT (id <=> 15)") == ["n", "f"]
    all_null = add("null", {"numRecords": 4, "minValues": {}, "maxValues": {}, "nullCount": {"id": 4}})
    assert kept([all_null], "id IS NOT NULL") == []
    assert kept([all_null], "id = 1 OR id > 2") == []
    assert kept([all_null], "NOT (id > 2)") == []
    assert kept([all_null], "id IS NULL") == ["null"]


def test_empty_file_is_pruned_by_any_condition_on_its_columns():
    empty = add("empty", {"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {}})
    assert kept([empty], "id IS NULL OR id IS NOT NULL") == []


def test_missing_stats_keep_the_file():
    no_stats = add("none")
    bad_stats = AddFile("bad", {"p": "1", "region": "eu"}, 1, 0, stats="{not json")
    other_column = add("other", stats(5, {"Name": "a"}, {"Name": "b"}, {"Name": 0}))
    no_null_count = add("nonull", {"numRecords": 5, "minValues": {"id": 1}, "maxValues": {"id": 2}})
    files = [no_stats, bad_stats, other_column, no_null_count]
    assert kept(files, "id = 100") == ["none", "bad", "other"]
    assert kept(files, "id IS NULL") == ["none", "bad", "other", "nonull"]
    assert kept(files, "id IS NOT NULL") == ["none", "bad", "other", "nonull"]


def test_stats_parsed_from_a_checkpoint_are_used():
    f = AddFile(
        "cp",
        {"p": "1"},
        1,
        0,
        stats_parsed=stats(2, {"day": dt.date(2020, 1, 1)}, {"day": dt.date(2020, 1, 5)}, {"day": 0}),
    )
    assert kept([f], "day = '2020-01-03'") == ["cp"]
    assert kept([f], "day > DATE '2020-01-05'") == []


# --- Logic ---------------------------------------------------------------------


def test_and_or_not():
    a = add("a", stats(5, {"id": 0, "Name": "a"}, {"id": 9, "Name": "c"}, {"id": 0, "Name": 0}))
    b = add("b", stats(5, {"id": 10, "Name": "d"}, {"id": 19, "Name": "f"}, {"id": 0, "Name": 0}))
    assert kept([a, b], "id < 5 AND name = 'e'") == []
    assert kept([a, b], "id < 5 OR name = 'e'") == ["a", "b"]
    assert kept([a, b], "NOT (id < 10 OR name > 'z')") == ["b"]
    assert kept([a, b], "NOT NOT (id >= 10)") == ["b"]
    assert kept([a, b], "(id = 3 AND name = 'b') OR (id = 15 AND name = 'zz')") == ["a"]


@pytest.mark.parametrize(
    "condition",
    [
        "f(id) = 100",
        "id + 1 = 100",
        "name LIKE 'zz%'",
        "id = p",
        "s.a = 100",
        "unknown_col = 100",
        "id = '100'",
        "name = 100",
        "rand() < 0.0",
        "id = CAST('x' AS INT)",
        "id IS TRUE",
        "(id = 100) = true",
    ],
)
def test_what_is_not_understood_keeps_every_file(condition):
    files = [TEN_TO_TWENTY, add("none")]
    assert kept(files, condition) == ["f", "none"]
    assert kept(files, f"NOT ({condition})") == ["f", "none"]


def test_unknown_parts_still_let_known_parts_prune():
    assert kept([TEN_TO_TWENTY], "id = 100 AND f(name) = 1") == []
    assert kept([TEN_TO_TWENTY], "id = 100 OR f(name) = 1") == ["f"]


def test_long_in_lists():
    values = ", ".join(str(i) for i in range(100, 5100))
    assert kept([TEN_TO_TWENTY], f"id IN ({values})") == []
    assert kept([TEN_TO_TWENTY], f"id IN ({values}, 17)") == ["f"]


def test_column_names_are_case_insensitive():
    assert kept([TEN_TO_TWENTY], "ID = 100") == []
    assert kept([TEN_TO_TWENTY], "`Id` = 15") == ["f"]


# --- Types -----------------------------------------------------------------------


def test_timestamps_add_one_millisecond_to_the_max():
    f = add("t", stats(2, {"ts": "2021-01-01T00:00:00.000Z"}, {"ts": "2021-01-01T00:00:01.000-08:00"}, {"ts": 0}))
    assert kept([f], "ts > TIMESTAMP '2021-01-01 08:00:01'") == ["t"]  # row may be at 08:00:01.0005
    assert kept([f], "ts >= '2021-01-01 08:00:01.001'") == ["t"]
    assert kept([f], "ts > TIMESTAMP '2021-01-01 08:00:01.001'") == []
    assert kept([f], "ts < TIMESTAMP '2021-01-01 00:00:00'") == []
    assert kept([f], "ts < TIMESTAMP '2021-01-01 00:00:00.000001'") == ["t"]
    # A literal without an offset is read in the session time zone.
    assert kept([f], "ts < TIMESTAMP '2021-01-01 00:00:00'", time_zone="Asia/Tokyo") == []
    assert kept([f], "ts < TIMESTAMP '2021-01-01 09:00:00.001'", time_zone="Asia/Tokyo") == ["t"]
    assert kept([f], "ts > TIMESTAMP '2020-12-31 23:00:02-09:00'") == []
    assert kept([f], "ts > TIMESTAMP '2020-12-31 23:00:01-09:00'") == ["t"]
    assert kept([f], "ts < DATE '2021-01-01'") == []
    with pytest.raises(InvalidInputError, match="time zone"):
        kept([f], "ts < DATE '2021-01-01'", time_zone="Nowhere/Else")


def test_timestamp_ntz():
    f = add("n", stats(2, {"ntz": "2021-01-01T00:00:00.000"}, {"ntz": "2021-01-02T00:00:00.000"}, {"ntz": 0}))
    assert kept([f], "ntz > TIMESTAMP_NTZ '2021-01-02 00:00:00.0005'") == ["n"]
    assert kept([f], "ntz > TIMESTAMP_NTZ '2021-01-02 00:00:00.001'") == []
    assert kept([f], "ntz < '2020-12-31'") == []


def test_dates():
    f = add("d", stats(2, {"day": "2020-01-01"}, {"day": "2020-01-31"}, {"day": 0}))
    assert kept([f], "day = DATE '2020-02-01'") == []
    assert kept([f], "day = '2020-01-15'") == ["d"]
    assert kept([f], "day < CAST('2020-01-01' AS DATE)") == []
    assert kept([f], "day IN ('2019-01-01', '2021-01-01')") == []
    assert kept([f], "day = 'not a date'") == ["d"]


def test_decimals_compare_exactly():
    f = add("m", stats(2, {"amount": 0.1}, {"amount": 12345678.99}, {"amount": 0}))
    assert kept([f], "amount < 0.1") == []
    assert kept([f], "amount <= 0.10") == ["m"]
    assert kept([f], "amount > 12345678.99") == []
    assert kept([f], "amount > 12345678.98") == ["m"]
    assert kept([f], "amount = 5") == ["m"]
    assert kept([f], "amount = 1e9") == ["m"]  # a double literal: not compared


def test_strings_and_truncated_bounds():
    f = add("s", stats(2, {"Name": "bob"}, {"Name": "dan"}, {"Name": 0}))
    assert kept([f], "name = 'carl'") == ["s"]
    assert kept([f], "name > 'dan'") == []
    assert kept([f], "name < 'bob'") == []
    assert kept([f], 'name = "bo"') == []
    long_max = "m" * 32
    t = add("t", stats(2, {"Name": "a" * 32}, {"Name": long_max}, {"Name": 0}))
    # The max may have been cut: "mmm...mz" could be in the file.
    assert kept([t], f"name = '{long_max}z'") == ["t"]
    assert kept([t], "name > 'zzz'") == ["t"]
    # A cut min is a prefix, still a lower bound.
    assert kept([t], "name < 'a'") == []


def test_doubles_keep_files_that_may_hold_nan():
    f = add("x", stats(2, {"score": 1.5}, {"score": 2.5}, {"score": 0}))
    assert kept([f], "score > 1000") == ["x"]  # NaN > 1000 in Spark; stats may leave NaN out
    assert kept([f], "score < 1.5") == []
    assert kept([f], "score <= 1.5") == ["x"]
    assert kept([f], "score = 1") == []


# --- Partitions --------------------------------------------------------------------


def test_partition_values_are_exact_with_sql_null_semantics():
    files = [add("a", p="1", region="eu"), add("b", p="2", region="us"), add("c", p=None, region=None)]
    assert kept(files, "p = 1") == ["a"]
    assert kept(files, "p != 1") == ["b"]
    assert kept(files, "NOT (p = 1)") == ["b"]
    assert kept(files, "p IS NULL") == ["c"]
    assert kept(files, "p IN (2, NULL)") == ["b"]
    assert kept(files, "REGION > 'f' OR p < 2") == ["a", "b"]
    assert kept(files, "p <=> NULL AND region IS NULL") == ["c"]
    assert kept(files, "p = 1.0") == ["a"]
    assert kept(files, "p = '1'") == ["a", "b", "c"]  # string vs int coercion: not guessed


def test_partition_and_stats_together():
    files = [
        add("a", stats(3, {"id": 0}, {"id": 5}, {"id": 0}), p="1"),
        add("b", stats(3, {"id": 6}, {"id": 9}, {"id": 0}), p="1"),
        add("c", stats(3, {"id": 0}, {"id": 5}, {"id": 0}), p="2"),
    ]
    assert kept(files, "p = 1 AND id > 5") == ["b"]
    assert kept(files, "p = 2 OR id > 5") == ["b", "c"]


def test_partition_filter_and_partition_matcher_are_exact():
    files = [add("a", p="1"), add("b", p="2"), add("c", p=None), add("d", p="oops")]
    good = files[:3]
    pred = Predicate.parse("p >= 2 OR p IS NULL")
    assert [f.path for f in partition_filter(good, pred, SCHEMA, PARTS)] == ["b", "c"]
    assert [partition_matcher(pred, SCHEMA, PARTS)(f) for f in good] == [False, True, True]
    # Undecidable: a bad partition value, a data column, or an unknown construct.
    assert partition_filter(files, pred, SCHEMA, PARTS) is None
    assert partition_filter(good, Predicate.parse("p = 1 AND id = 3"), SCHEMA, PARTS) is None
    assert partition_filter(good, Predicate.parse("abs(p) = 1"), SCHEMA, PARTS) is None
    with pytest.raises(InvalidInputError, match="partition values"):
        partition_matcher(Predicate.parse("p = 1 AND id = 3"), SCHEMA, PARTS)(good[0])
    # Decidable even when a data column is ANDed with a false partition test.
    assert partition_matcher(Predicate.parse("p = 1 AND id = 3"), SCHEMA, PARTS)(good[1]) is False


def test_no_predicate_keeps_everything():
    files = [TEN_TO_TWENTY, add("none")]
    assert prune_files(iter(files), None, SCHEMA, PARTS) == files


# --- Property: pruning never drops a file holding a matching row --------------------

_DUCK = duckdb.connect()
_DUCK.execute("SET TimeZone = 'UTC'")
PROP_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "x", "type": "long", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
    ],
}

_ints = st.integers(-5, 5)
_strs = st.one_of(st.text("abé", max_size=3), st.text("ab", min_size=31, max_size=34))
_rows = st.lists(st.tuples(st.one_of(st.none(), _ints), st.one_of(st.none(), _strs)), min_size=1, max_size=6)
_files = st.lists(
    st.tuples(st.one_of(st.none(), _ints), _rows, st.sampled_from(["full", "none", "partial", "cut"])),
    min_size=1,
    max_size=5,
)


def _sql_literal(column: str, draw_int: int, draw_str: str) -> str:
    return "'" + draw_str.replace("'", "''") + "'" if column == "s" else str(draw_int)


@st.composite
def _leaf(draw) -> tuple[str, str]:
    column = draw(st.sampled_from(["x", "s", "p", "X", "P"]))
    lit = lambda: _sql_literal(column.lower(), draw(_ints), draw(_strs))  # noqa: E731
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "between", "null", "nsafe", "left", "opaque", "nulllit"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        text = f"{column} {op} {lit()}"
        return text, text
    if kind == "in":
        items = [lit() for _ in range(draw(st.integers(1, 3)))] + (["NULL"] if draw(st.booleans()) else [])
        text = f"{column} IN ({', '.join(items)})"
        return text, text
    if kind == "between":
        text = f"{column} BETWEEN {lit()} AND {lit()}"
        return text, text
    if kind == "null":
        text = f"{column} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
        return text, text
    if kind == "nsafe":
        value = lit()
        return f"{column} <=> {value}", f"{column} IS NOT DISTINCT FROM {value}"
    if kind == "left":
        op = draw(st.sampled_from(["=", "<", ">="]))
        text = f"{lit()} {op} {column}"
        return text, text
    if kind == "nulllit":
        text = f"{column} = NULL"
        return text, text
    text = "length(s) = 2" if column.lower() == "s" else f"{column} + 1 = 3"
    return text, text


def _predicates() -> st.SearchStrategy[tuple[str, str]]:
    def extend(children):
        binary = st.tuples(children, st.sampled_from(["AND", "OR"]), children).map(
            lambda t: (f"({t[0][0]}) {t[1]} ({t[2][0]})", f"({t[0][1]}) {t[1]} ({t[2][1]})")
        )
        negated = children.map(lambda c: (f"NOT ({c[0]})", f"NOT ({c[1]})"))
        return st.one_of(binary, negated)

    return st.recursive(_leaf(), extend, max_leaves=5)


def _exact_stats(rows: list[tuple[Any, Any]], mode: str) -> str | None:
    if mode == "none":
        return None
    out: dict[str, Any] = {"numRecords": len(rows), "minValues": {}, "maxValues": {}, "nullCount": {}}
    for i, name in enumerate(["x", "s"]):
        values = [r[i] for r in rows if r[i] is not None]
        out["nullCount"][name] = len(rows) - len(values)
        if values:
            lo, hi = min(values), max(values)
            if mode == "cut" and name == "s" and len(hi) > 32:
                lo, hi = lo[:32], hi[:32]  # a writer that cuts without a tie-breaker
            out["minValues"][name], out["maxValues"][name] = lo, hi
    if mode == "partial":
        out["minValues"].pop("x", None)
        out["nullCount"].pop("s")
    return json.dumps(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_files, _predicates())
def test_no_file_with_a_matching_row_is_pruned(files, predicate):
    spark_sql, duck_sql = predicate
    adds, table = [], {"f": [], "x": [], "s": [], "p": []}
    for i, (p, rows, mode) in enumerate(files):
        adds.append(AddFile(f"f{i}", {"p": None if p is None else str(p)}, 1, 0, stats=_exact_stats(rows, mode)))
        for x, s in rows:
            for key, value in zip(table, (f"f{i}", x, s, p)):
                table[key].append(value)
    rows_table = pa.table(
        table, schema=pa.schema([("f", pa.string()), ("x", pa.int64()), ("s", pa.string()), ("p", pa.int32())])
    )
    _DUCK.register("rows_arrow", rows_table)
    _DUCK.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM rows_arrow")
    # The predicate is evaluated in a projection: DuckDB 1.5.5's WHERE drops the
    # row of ``(p = 0) OR (NOT (p IS NOT DISTINCT FROM 0))`` with p NULL, which
    # its own SELECT of the same expression calls true.
    verdicts = _DUCK.execute(f"SELECT f, ({duck_sql}) IS TRUE FROM t").fetchall()
    matching = {f for f, hit in verdicts if hit}
    pred = Predicate.parse(spark_sql)
    survivors = {a.path for a in prune_files(adds, pred, PROP_SCHEMA, ["p"])}
    assert matching <= survivors, spark_sql

    exact = partition_filter(adds, pred, PROP_SCHEMA, ["p"])
    if exact is not None:
        counts = {f: sum(1 for g, hit in verdicts if hit and g == f) for f in matching}
        wholly = {a.path for a in adds if counts.get(a.path, 0) == len(files[int(a.path[1:])][1])}
        assert {a.path for a in exact} == wholly, spark_sql


# --- Golden tables ----------------------------------------------------------------------


def _golden(table: Path) -> tuple[Metadata, list[AddFile]]:
    metadata, adds = None, {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in parse_commit(commit.read_bytes()):
            if isinstance(action, Metadata):
                metadata = action
            elif isinstance(action, AddFile):
                adds[action.path] = action
    assert metadata is not None
    return metadata, list(adds.values())


def _file_rows(table: Path, add: AddFile, metadata: Metadata) -> pa.Table:
    """One file's rows, with the partition columns it lacks taken from the log."""
    rows = pq.read_table(table / decode_path(add.path))
    types = {f["name"]: f["type"] for f in metadata.schema_json["fields"]}
    values = parse_partition_values(add.partition_values, metadata.schema_json, metadata.partition_columns)
    for name, value in values.items():
        if name not in rows.column_names:
            rows = rows.append_column(name, pa.array([value] * rows.num_rows, to_arrow_type(types[name])))
    return rows


def _check_golden(table: Path, conditions: list[tuple[str, bool]]) -> None:
    deltalake = pytest.importorskip("deltalake")
    metadata, adds = _golden(table)
    per_file = {a.path: _file_rows(table, a, metadata) for a in adds}
    all_rows = deltalake.DeltaTable(str(table)).to_pyarrow_table()
    assert all_rows.num_rows == sum(t.num_rows for t in per_file.values())
    for condition, some_pruned in conditions:
        survivors = {
            a.path
            for a in prune_files(adds, Predicate.parse(condition), metadata.schema_json, metadata.partition_columns)
        }
        holding = set()
        for path, rows in per_file.items():
            _DUCK.register("golden_file", rows)
            if _DUCK.execute(f"SELECT count(*) FROM golden_file WHERE {condition}").fetchone()[0]:
                holding.add(path)
        assert holding <= survivors, condition
        assert (len(survivors) < len(adds)) == some_pruned, condition


def test_golden_all_types(golden_dir):
    _check_golden(
        golden_dir / "data-skipping-basic-stats-all-types",
        [
            ("as_int = 0", False),
            ("as_int = 1", True),
            ("as_long > 0", True),
            ("as_byte <= 0", False),
            ("as_short != 0", True),
            ("as_float < 0", True),
            ("as_float >= 0", False),
            ("as_double = 0.0", False),
            ("as_double > 0.5", False),  # doubles keep their max unknown
            ("as_string = '0'", False),
            ("as_string > '0'", True),
            ("as_date = DATE '2000-01-01'", False),
            ("as_date > '2000-01-01'", True),
            ("as_timestamp = TIMESTAMP '2000-01-01 08:00:00'", False),
            ("as_timestamp < TIMESTAMP '2000-01-01 08:00:00'", True),
            ("as_big_decimal = 1", True),
            ("as_big_decimal IN (0, 5)", False),
            ("as_int IS NULL", True),
            ("as_int IS NOT NULL AND as_string = '0'", False),
            ("as_int = 1 OR as_string = '0'", False),
        ],
    )


def test_golden_partition_and_data_column(golden_dir):
    _check_golden(
        golden_dir / "data-skipping-partition-and-data-column",
        [
            ("part = 0", True),
            ("id = 1", True),
            ("part = 0 AND id = 1", True),
            ("part = 0 OR id = 1", True),
            ("part IN (0, 1)", False),
            ("NOT (part = 0 AND id = 0)", True),
            ("part + id = 1", False),
        ],
    )


def test_golden_timestamp_ntz(golden_dir):
    """delta-spark's timestamp_ntz stats (milliseconds, no zone) and partition
    values. String literals, which both Spark and DuckDB cast to a timestamp
    without a zone, so that DuckDB can judge each file's rows."""
    _check_golden(
        golden_dir / "data-reader-timestamp_ntz",
        [
            ("tsNtz >= '2013-07-05 17:01:00.123'", False),
            ("tsNtz = '2021-11-18 02:30:00.123456'", True),
            # A max of 02:30:00.123 stands for up to 02:30:00.123999: the rows
            # at 02:30:00.123456 match, and their files must stay.
            ("tsNtz > '2021-11-18 02:30:00.123'", True),
            ("tsNtz > '2021-11-18 02:30:00.124'", True),
            ("tsNtz < '2021-11-18 00:00:00'", True),
            ("tsNtz BETWEEN '2013-07-05 17:01:00.123456' AND '2013-07-05 17:01:00.123456'", True),
            ("tsNtz IS NULL", True),
            ("tsNtzPartition = '2013-07-05 17:01:00.123456'", True),
            ("tsNtzPartition > '2014-01-01 00:00:00'", True),
            ("tsNtzPartition IS NULL OR tsNtz < '2000-01-01 00:00:00'", True),
        ],
    )
