"""The source rules, checked with no Spark: a path or a query, and the views' description."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.sources.spec import SourceView, parse_source_views, views_json
from airflow_delta_provider.operators.delta import DeltaAppendOperator, DeltaMergeOperator
from airflow_delta_provider.spark.cli import parse_request

VIEWS = {
    "orders": {"path": "s3://raw/orders", "format": "delta", "version": "12"},
    "fx": {"path": "/in/fx.csv", "format": "csv", "options": {"header": True}},
}


def test_views_are_parsed_from_a_mapping_or_its_json() -> None:
    expected = (
        SourceView("orders", "s3://raw/orders", "delta", 12),
        SourceView("fx", "/in/fx.csv", "csv", None, (("header", "True"),)),
    )
    assert parse_source_views(VIEWS) == expected
    assert parse_source_views(json.dumps(VIEWS)) == expected
    assert parse_source_views(views_json(VIEWS)) == expected
    assert parse_source_views(None) == ()


@pytest.mark.parametrize(
    "views, message",
    [
        ("{not json", "not valid JSON"),
        ('["orders"]', "must map view names"),
        ({"o": "s3://x"}, "give {path, format}"),
        ({"o": {"format": "csv"}}, "path is required"),
        ({"o": {"path": "/x", "format": "avro"}}, "format must be one of"),
        ({"o": {"path": "/x", "format": "csv", "version": 2}}, "a version needs format delta"),
        ({"o": {"path": "/x", "format": "delta", "version": -1}}, "non-negative integer"),
        ({"o": {"path": "/x", "format": "delta", "version": True}}, "non-negative integer"),
        ({"o": {"path": "/x", "format": "csv", "options": ["header"]}}, "options must map"),
        ({"o": {"path": "/x", "format": "csv", "header": "true"}}, "unknown key"),
        ({"my-view": {"path": "/x", "format": "csv"}}, "letters, digits and underscores"),
        ({"O": {"path": "/x", "format": "csv"}, "o": {"path": "/y", "format": "csv"}}, "names a view twice"),
    ],
)
def test_a_bad_view_is_named_with_its_problem(views, message) -> None:
    with pytest.raises(ValueError, match=message):
        parse_source_views(views)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "exactly one"),
        ({"source": "/x", "format": "csv", "source_sql": "SELECT 1"}, "exactly one"),
        ({"source": "/x"}, "give the source's format"),
        (
            {"source": "/x", "format": "csv", "source_views": '{"o": {"path": "/x", "format": "csv"}}'},
            "give source_sql too",
        ),
        ({"source_sql": "  "}, "source_sql is empty"),
        ({"source_sql": "SELECT 1", "format": "csv"}, "a query's views carry their own"),
        ({"source_sql": "SELECT 1", "options": (("header", "true"),)}, "a query's views carry their own"),
        ({"source_sql": "SELECT 1", "source_views": '{"o": {"path": "/x"}}'}, "format must be one of"),
    ],
)
def test_append_takes_a_path_or_a_query(fields, message) -> None:
    with pytest.raises(ValueError, match=message):
        AppendSpec(table="/t", **fields)


def test_merge_takes_a_path_or_a_query() -> None:
    common = {"table": "/t", "on": "t.id = s.id", "clauses": json.dumps([{"when": "matched", "delete": True}])}
    with pytest.raises(ValueError, match="exactly one"):
        MergeSpec(**common)
    with pytest.raises(ValueError, match="a query's views carry their own"):
        MergeSpec(**common, source_sql="SELECT 1", source_version=3)
    request = MergeSpec(
        **common, source_sql="SELECT * FROM u", source_views=json.dumps({"u": {"path": "/u", "format": "orc"}})
    )
    assert parse_request(request.to_argv()) == request
    assert request.to_argv()[2:6] == ["--source-format", "parquet", "--source-sql", "SELECT * FROM u"]


def test_the_operators_refuse_a_bad_source_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        DeltaAppendOperator(task_id="a", table_path="/t")
    with pytest.raises(ValueError, match="exactly one"):
        DeltaAppendOperator(task_id="a", table_path="/t", source="/x", source_sql="SELECT 1")
    with pytest.raises(ValueError, match="DeltaAppendOperator: view o: format must be one of"):
        DeltaAppendOperator(task_id="a", table_path="/t", source_sql="SELECT 1", source_views={"o": {"path": "/x"}})
    with pytest.raises(ValueError, match="give source_sql too"):
        DeltaMergeOperator(task_id="m", table_path="/t", source="/x", on="t.id = s.id", clauses=[], source_views={})
    with pytest.raises(ValueError, match="carry their own"):
        DeltaMergeOperator(task_id="m", table_path="/t", source_sql="SELECT 1", on="t.id = s.id", clauses=[],
                           source_version=2)  # fmt: skip
    # A template is checked once rendered.
    templated = {"o": {"path": "/x", "format": "delta", "version": "{{ ti.xcom_pull(task_ids='a') }}"}}
    append = DeltaAppendOperator(task_id="a", table_path="/t", source_sql="SELECT 1", source_views=templated)
    assert "source_views" in append.template_fields


def test_a_rendered_query_source_reaches_the_request() -> None:
    operator = DeltaAppendOperator(
        task_id="a", table_path="/t", source_sql="SELECT * FROM o WHERE ds = '2026-01-02'",
        source_views={"o": {"path": "/o", "format": "delta", "version": "4"}},
    )  # fmt: skip
    request = operator.request()
    assert (request.source, request.source_format, request.source_sql) == (
        None,
        None,
        "SELECT * FROM o WHERE ds = '2026-01-02'",
    )
    assert parse_source_views(request.source_views) == (SourceView("o", "/o", "delta", 4),)
