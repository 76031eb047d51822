"""MERGE's clause language (delta/merge_clauses.py): what parses, what is
refused with which message, and delta-spark's operationParameters."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.operations.merge.clauses import (
    MergeClause,
    clauses_json,
    operation_parameters,
    parse_clauses,
)


def test_every_kind_and_action_parses_in_order():
    text = json.dumps(
        [
            {"when": "matched", "condition": "s.op = 'D'", "delete": True},
            {"when": "matched", "update": "*"},
            {"when": "not_matched", "insert": {"id": "s.id"}},
            {"when": "not_matched_by_source", "condition": "t.old", "update": {"flag": "true"}},
            {"when": "not_matched_by_source", "delete": True},
        ]
    )
    clauses = parse_clauses(text)
    assert clauses == (
        MergeClause("matched", "delete", "s.op = 'D'"),
        MergeClause("matched", "update"),
        MergeClause("not_matched", "insert", None, {"id": "s.id"}),
        MergeClause("not_matched_by_source", "update", "t.old", {"flag": "true"}),
        MergeClause("not_matched_by_source", "delete"),
    )
    assert [c.is_star for c in clauses] == [False, True, False, False, False]
    assert parse_clauses(clauses_json(clauses)) == clauses  # the CLI text round-trips


@pytest.mark.parametrize(
    "clauses, message",
    [
        ("not json", "not valid JSON"),
        ([], "non-empty list"),
        ({"when": "matched"}, "non-empty list"),
        (["matched"], "clause 1 is not an object"),
        ([{"when": "matched", "update": "*", "set": {}}], r"unknown keys \['set'\]"),
        ([{"when": "always", "delete": True}], "when must be one of"),
        ([{"when": ["matched"], "delete": True}], "when must be one of"),
        ([{"when": "matched"}], "exactly one action"),
        ([{"when": "matched", "delete": True, "update": "*"}], "exactly one action"),
        ([{"when": "matched", "insert": "*"}], "a matched clause may update or delete, not insert"),
        ([{"when": "not_matched", "update": "*"}], "may insert, not update"),
        ([{"when": "not_matched_by_source", "insert": "*"}], "may update or delete, not insert"),
        ([{"when": "matched", "delete": "yes"}], '"delete": true'),
        ([{"when": "matched", "update": {}}], "non-empty object"),
        ([{"when": "matched", "update": ["a"]}], "non-empty object"),
        ([{"when": "matched", "update": {"a": " "}}], "expression for column 'a'"),
        ([{"when": "matched", "condition": "", "delete": True}], "condition must be a non-empty"),
        ([{"when": "not_matched_by_source", "update": "*"}], "cannot use \\*"),
        (
            [{"when": "matched", "delete": True}, {"when": "matched", "condition": "x", "update": "*"}],
            r"clause 1 \(when matched delete\) has no condition but is not the last matched clause",
        ),
    ],
)
def test_bad_clauses_are_named(clauses, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_clauses(clauses)


def test_an_unconditional_clause_may_end_each_kind():
    clauses = parse_clauses(
        [
            {"when": "matched", "condition": "s.x", "delete": True},
            {"when": "not_matched", "insert": "*"},
            {"when": "matched", "update": "*"},
        ]
    )
    assert len(clauses) == 3


def test_operation_parameters_are_delta_sparks():
    clauses = parse_clauses(
        [
            {"when": "matched", "condition": "s.op = 'D'", "delete": True},
            {"when": "matched", "update": "*"},
            {"when": "not_matched", "insert": "*"},
        ]
    )
    params = operation_parameters("t.id = s.id", clauses)
    # the text delta-spark records: compact JSON, each clause's predicate before its action
    assert params == {
        "predicate": '["t.id = s.id"]',
        "matchedPredicates": '[{"predicate":"s.op = \'D\'","actionType":"delete"},{"actionType":"update"}]',
        "notMatchedPredicates": '[{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": "[]",
    }
