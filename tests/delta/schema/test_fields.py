"""Tests for :mod:`airflow_delta_provider.delta.schema.fields`; oracle: the
``nullCount`` layout of delta-spark's per-file stats."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.schema.fields import column_names, field_by_name, leaf_fields
from tests.delta.schema.builders import GOLDEN_STATS_TABLES, array, field, flatten_keys, map_, struct


@pytest.mark.parametrize("table", GOLDEN_STATS_TABLES)
def test_leaf_fields_match_delta_spark_stats_layout(golden_dir, table):
    actions = [a for p in sorted((golden_dir / table / "_delta_log").glob("*.json"))
               for a in map(json.loads, p.read_text().splitlines())]
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    stats = next(json.loads(a["add"]["stats"]) for a in actions if a.get("add", {}).get("stats"))

    leaves = leaf_fields(json.loads(metadata["schemaString"]), exclude=metadata["partitionColumns"])

    assert [path for path, _ in leaves] == flatten_keys(stats["nullCount"])


def test_field_by_name_and_column_names():
    schema = struct(field("Id", "long"), field("name", "string"), field("id", "integer"))

    assert column_names(schema) == ["Id", "name", "id"]
    assert field_by_name(schema, "id")["type"] == "integer"  # exact match wins
    assert field_by_name(schema, "NAME")["name"] == "name"
    assert field_by_name(schema, "NAME", case_insensitive=False) is None
    assert field_by_name(schema, "missing") is None


def test_leaf_fields_order_limit_and_exclusions():
    schema = struct(
        field("p", "string"),
        field("a", struct(field("b", "long"), field("c", struct(field("d", "date"))))),
        field("arr", array(struct(field("x", "long")))),
        field("nothing", "void"),
        field("m", map_("string", "long")),
        field("z", "double"),
    )

    all_leaves = leaf_fields(schema, limit=None, exclude=["P"])

    assert [p for p, _ in all_leaves] == [("a", "b"), ("a", "c", "d"), ("arr",), ("m",), ("z",)]
    assert all_leaves[2][1] == array(struct(field("x", "long")))
    assert leaf_fields(schema, limit=2, exclude=["p"]) == all_leaves[:2]
    assert leaf_fields(schema, limit=-1, exclude=["p"]) == all_leaves
    assert leaf_fields(schema, limit=1)[0] == (("p",), "string")
    assert leaf_fields(schema, limit=0) == []
