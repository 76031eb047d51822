"""What file pruning learns from a MERGE join condition (delta/merge_condition.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.merge_condition import check_alias, join_facts, key_range_sql
from airflow_delta_provider.delta.skipping import Predicate

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
    assert facts("t.id = s.id AND t.amount > s.amount").target_filter is None


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
    from airflow_delta_provider.delta.actions import AddFile
    from airflow_delta_provider.delta.skipping import prune_files

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
