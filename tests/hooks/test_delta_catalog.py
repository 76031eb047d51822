"""Catalog settings from each connection type, and names resolved for reading."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.hooks.delta_catalog import DeltaCatalogHook, resolve_for_reading


def _conn(monkeypatch, conn_id: str, **fields) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def test_each_connection_type(monkeypatch) -> None:
    monkeypatch.delenv("UNITY_CATALOG_URL", raising=False)
    _conn(monkeypatch, "uc", conn_type="unity_catalog", host="http://uc:8080", password="tok")
    _conn(monkeypatch, "dbx", conn_type="databricks", host="adb-1.azuredatabricks.net", extra={"token": "dapi"})
    _conn(
        monkeypatch,
        "glue",
        conn_type="aws",
        login="AK",
        password="SK",
        extra={"region_name": "eu-west-1", "service_config": {"glue": {"endpoint_url": "http://glue:5000"}}},
    )
    _conn(monkeypatch, "hms", conn_type="hive_metastore", host="metastore", port=9083)
    _conn(monkeypatch, "pg", conn_type="postgres", host="db")

    uc = DeltaCatalogHook("uc").settings()
    assert (uc.unity_url, uc.unity_token) == ("http://uc:8080", "tok") and "tok" not in repr(uc)
    dbx = DeltaCatalogHook("dbx").settings()
    assert (dbx.unity_url, dbx.unity_token) == ("https://adb-1.azuredatabricks.net", "dapi")
    glue = DeltaCatalogHook("glue").settings()
    assert dict(glue.aws) == {
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "region_name": "eu-west-1",
        "endpoint_url": "http://glue:5000",
    }
    assert DeltaCatalogHook("hms").settings().hive_uri == "thrift://metastore:9083"
    from airflow.sdk.exceptions import AirflowException

    with pytest.raises(AirflowException, match="catalog_conn_id takes"):
        DeltaCatalogHook("pg").settings()


def test_without_a_connection_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("UNITY_CATALOG_URL", "http://env:8080")
    monkeypatch.setenv("HIVE_METASTORE_URI", "thrift://env:9083")
    settings = DeltaCatalogHook().settings()
    assert (settings.unity_url, settings.hive_uri) == ("http://env:8080", "thrift://env:9083")


def test_a_path_is_read_as_it_is() -> None:
    assert resolve_for_reading("/data/t", {"k": "v"}) == ("/data/t", {"k": "v"})
