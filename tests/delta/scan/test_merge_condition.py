"""What file pruning learns from a MERGE join condition (delta/merge_condition.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.scan.merge_condition import join_facts, key_range_sql
from airflow_delta_provider.delta.scan.skipping import Predicate
from airflow_delta_provider.operations.merge.spec import check_alias

TARGET = ["id", "day", "region", "amount"]
SOURCE = ["id", "day", "amount", "src_only"]


def facts(on: str):
    return join_facts(on, "t", "s", TARGET, SOURCE)


def test_key_pairs_and_target_only_conjuncts():
    f = facts("t.id = s.id AND t.day = '2024-05-01' AND (t.region IN ('eu', 'us'))")
    assert f.key_pairs == (("id", "id"),)
    assert f.target_filter is not None
    pred = Predicate.parse(f.target_filter)
    assert pred.columns == {"day", "region"}
    assert set(f.target_columns) == {"id", "day", "region"}


def test_sides_are_placed_by_qualifier_or_by_the_only_side_with_the_column():
    f = facts("s.id = t.id AND src_only = t.amount AND region = 'eu'")
    assert f.key_pairs == (("id", "id"), ("amount", "src_only"))
    assert f.target_filter == "(`region` = 'eu')"


def test_aliases_and_names_match_case_insensitively():
    f = join_facts("T.ID = S.Id", "t", "s", ["Id"], ["id"])
    assert f.key_pairs == (("Id", "id"),)


@pytest.mark.parametrize(
    "on",
    [
        "id = s.id",  # unqualified id is on both sides: ambiguous, no fact
        "t.id + 1 = s.id",  # not column = column
        "t.id = s.id OR t.day = s.day",  # a disjunction is not split
        "t.id <=> s.id",  # null-safe: NULL keys match, min/max would miss them
        "t.nosuch = s.id",
        "x.id = s.id",  # an unknown qualifier
    ],
)
def test_what_is_not_understood_gives_no_pair(on):
    assert facts(on).key_pairs == ()


def test_a_conjunct_reading_both_sides_is_no_target_filter():
    f = facts("t.id = s.id AND t.amount > s.amount")
    assert f.target_filter is None and not f.equi_join


@pytest.mark.parametrize(
    "on, equi",
    [
        ("t.id = s.id", True),
        ("t.id = s.id AND t.day = s.day AND t.region = 'eu'", True),
        ("t.id = s.id AND s.amount > 0", False),  # a source-only conjunct
        ("t.id = s.id OR t.day = s.day", False),
        ("t.region = 'eu'", False),  # no key at all
        ("t.id <=> s.id", False),
    ],
)
def test_equi_join_means_keys_decide_every_match(on, equi):
    assert facts(on).equi_join is equi


def test_an_unparsable_condition_gives_no_facts():
    assert facts("t.id = = s.id") == join_facts("", "t", "s", [], [])


@pytest.mark.parametrize(
    "low, high, expected",
    [
        (3, 17, "`k` >= 3 AND `k` <= 17"),
        ("a'b", "z", "`k` >= 'a\\'b' AND `k` <= 'z'"),
        (
            dt.date(2024, 1, 2),
            dt.date(2024, 3, 4),
            "`k` >= CAST('2024-01-02' AS DATE) AND `k` <= CAST('2024-03-04' AS DATE)",
        ),
        (Decimal("1.50"), Decimal("2.25"), "`k` >= 1.50 AND `k` <= 2.25"),
        (1.5, 2.5, None),  # float bounds are not trusted
        (dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2), None),
        (None, 3, None),
        (True, True, None),
    ],
)
def test_key_ranges(low, high, expected):
    sql = key_range_sql("k", low, high)
    assert sql == expected
    if sql is not None:
        Predicate.parse(sql)  # file skipping reads it


def test_a_key_range_prunes_files_by_stats():
    from airflow_delta_provider.delta.actions.model import AddFile
    from airflow_delta_provider.delta.scan.skipping import prune_files

    schema = {"type": "struct", "fields": [{"name": "k", "type": "long", "nullable": True, "metadata": {}}]}

    def add(lo: int, hi: int) -> AddFile:
        stats = f'{{"numRecords":10,"minValues":{{"k":{lo}}},"maxValues":{{"k":{hi}}},"nullCount":{{"k":0}}}}'
        return AddFile(
            path=f"{lo}.parquet", partition_values={}, size=1, modification_time=0, data_change=True, stats=stats
        )

    files = [add(0, 9), add(10, 19), add(20, 29)]
    kept = prune_files(files, Predicate.parse(key_range_sql("k", 12, 15)), schema, [])
    assert [f.path for f in kept] == ["10.parquet"]


@pytest.mark.parametrize("alias", ["", "t.x", "1t", "a b", "`t`"])
def test_aliases_must_be_plain_identifiers(alias):
    with pytest.raises(InvalidInputError, match="plain identifier"):
        check_alias(alias, "target")
    assert check_alias("target_1", "target") == "target_1"


def test_a_key_set_prunes_files_between_clusters_of_keys():
    from airflow_delta_provider.delta.actions.model import AddFile
    from airflow_delta_provider.delta.scan.skipping import prune_by_keys

    schema = {
        "type": "struct",
        "fields": [
            {"name": "k", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        ],
    }

    def add(name: str, stats: str | None, p: str | None = "1") -> AddFile:
        return AddFile(path=name, partition_values={"p": p}, size=1, modification_time=0, data_change=True, stats=stats)

    def bounds(lo: int, hi: int, nulls: int = 0, n: int = 10) -> str:
        return f'{{"numRecords":{n},"minValues":{{"k":{lo}}},"maxValues":{{"k":{hi}}},"nullCount":{{"k":{nulls}}}}}'

    files = [
        add("a", bounds(0, 9)),
        add("b", bounds(10, 19)),
        add("c", bounds(20, 29)),
        add("no-stats", None),
        add("all-null", '{"numRecords":3,"nullCount":{"k":3}}'),
    ]
    kept = prune_by_keys(files, "k", [3, 25], schema, ["p"])
    assert [f.path for f in kept] == ["a", "c", "no-stats"]
    assert prune_by_keys(files, "K", [10], schema, ["p"])[0].path == "b"  # names match case-insensitively
    assert prune_by_keys(files, "k", [], schema, ["p"]) == []  # no key: nothing can match
    # A partition column is judged by its value; a non-integral column prunes nothing.
    parts = [add("p1", None, "1"), add("p2", None, "2"), add("pnull", None, None)]
    assert [f.path for f in prune_by_keys(parts, "p", [2], schema, ["p"])] == ["p2"]
    assert prune_by_keys(files, "s", ["x"], schema, ["p"]) == files
