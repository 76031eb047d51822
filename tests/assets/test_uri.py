"""table_asset_uri: one table, one asset URI, whatever the path's spelling."""

from __future__ import annotations

import pytest

from airflow_delta_provider.assets import table_asset_uri


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/data/orders", "file:///data/orders"),
        ("file:///data/orders", "file:///data/orders"),
        ("/data/orders/", "file:///data/orders"),
        ("s3://lake/sales/orders", "s3://lake/sales/orders"),
        ("s3a://lake/sales/orders", "s3://lake/sales/orders"),
        ("gs://lake/orders", "gs://lake/orders"),
        ("abfss://box@acct.dfs.core.windows.net/orders", "abfss://box@acct.dfs.core.windows.net/orders"),
    ],
)
def test_spellings_of_one_table_give_one_uri(path, uri):
    assert table_asset_uri(path) == uri


def test_an_azure_uri_takes_its_account_from_the_options(monkeypatch):
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    assert table_asset_uri("az://box/orders", {"account_name": "acct"}) == (
        "abfss://box@acct.dfs.core.windows.net/orders"
    )


def test_a_relative_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert table_asset_uri("orders") == (tmp_path / "orders").as_uri()
