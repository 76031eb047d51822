"""A Delta schema as Unity Catalog's and Hive's columns."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.catalog.columns import hive_columns, sql_type, unity_columns

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True}, "nullable": True},
        {
            "name": "attrs",
            "type": {"type": "map", "keyType": "string", "valueType": "short", "valueContainsNull": True},
            "nullable": True,
        },
        {
            "name": "s",
            "type": {"type": "struct", "fields": [{"name": "a", "type": "byte", "nullable": True}]},
            "nullable": True,
        },
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
    ],
}


def test_hive_types_are_spark_sql_names() -> None:
    assert hive_columns(SCHEMA) == [
        ("id", "bigint"),
        ("n", "int"),
        ("amount", "decimal(10,2)"),
        ("tags", "array<string>"),
        ("attrs", "map<string,smallint>"),
        ("s", "struct<a:tinyint>"),
        ("day", "date"),
    ]
    assert sql_type("timestamp_ntz") == "timestamp_ntz"


def test_unity_columns_as_spark_connector_sends_them() -> None:
    columns = unity_columns(SCHEMA, ["day"])
    by_name = {c["name"]: c for c in columns}
    assert [c["position"] for c in columns] == list(range(7))
    assert by_name["id"]["type_name"] == "LONG" and by_name["id"]["type_text"] == "bigint"
    assert by_name["id"]["nullable"] is False
    assert by_name["n"]["type_name"] == "INT"
    assert (by_name["amount"]["type_name"], by_name["amount"]["type_precision"], by_name["amount"]["type_scale"]) == (
        "DECIMAL",
        10,
        2,
    )
    assert by_name["tags"]["type_name"] == "ARRAY" and by_name["s"]["type_name"] == "STRUCT"
    assert by_name["day"]["partition_index"] == 0 and "partition_index" not in by_name["id"]
    assert json.loads(by_name["id"]["type_json"]) == {"name": "id", "type": "long", "nullable": False, "metadata": {}}
