"""Tests for :mod:`airflow_delta_provider.delta.schema.types`: decimal types and
``schemaString``, checked against pyspark's pure-Python ``StructType`` (no JVM)."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.schema.types import parse_decimal, schema_string
from tests.delta.schema.builders import array, field, map_, struct


def test_schema_string_matches_spark_json_value():
    types = pytest.importorskip("pyspark.sql.types")
    schema = struct(
        field("a", struct(field("b", array(map_("string", "decimal(5,2)", False))))),
        field("c", "timestamp", False, {"comment": "x"}),
    )

    assert json.loads(schema_string(schema)) == types.StructType.fromJson(schema).jsonValue()


def test_parse_decimal():
    assert parse_decimal("decimal(10,2)") == (10, 2)
    assert parse_decimal("decimal( 7 , 0 )") == (7, 0)
    assert parse_decimal("decimal") == (10, 0)


def test_schema_string_uses_delta_spark_key_order_and_is_compact():
    scrambled = {
        "fields": [
            {"metadata": {}, "nullable": False, "type": "long", "name": "id"},
            {"type": {"valueContainsNull": True, "valueType": "string", "keyType": "string", "type": "map"},
             "name": "tags", "nullable": True, "metadata": {}},
        ],
        "type": "struct",
    }

    text = schema_string(scrambled)

    assert text == (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},'
        '{"name":"tags","type":{"type":"map","keyType":"string","valueType":"string",'
        '"valueContainsNull":true},"nullable":true,"metadata":{}}]}'
    )
    assert json.loads(text) == scrambled
