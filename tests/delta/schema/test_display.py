"""Tests for :mod:`airflow_delta_provider.delta.schema.display`; oracle: pyspark's
pure-Python ``StructType.treeString`` (no JVM)."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.schema.display import tree_string
from tests.delta.schema.builders import array, field, golden_metadata, struct


@pytest.mark.parametrize("table", ["parquet-all-types", "data-reader-map", "data-reader-nested-struct"])
def test_tree_string_matches_spark(golden_dir, table):
    types = pytest.importorskip("pyspark.sql.types")
    schema = json.loads(golden_metadata(golden_dir, table)["schemaString"])

    assert tree_string(schema) == types.StructType.fromJson(schema).treeString().rstrip("\n")


def test_tree_string_layout():
    schema = struct(field("id", "long", False), field("xs", array(struct(field("v", "decimal(3,1)")))))

    assert tree_string(schema).splitlines() == [
        "root",
        " |-- id: long (nullable = false)",
        " |-- xs: array (nullable = true)",
        " |    |-- element: struct (containsNull = true)",
        " |    |    |-- v: decimal(3,1) (nullable = true)",
    ]
