"""Dataset names follow the OpenLineage naming spec, as OpenLineage's own helpers spell it."""

from __future__ import annotations

import pytest

from airflow_delta_provider.lineage.naming import DatasetName, dataset_name, needs_storage_options

naming = pytest.importorskip("openlineage.client.naming.dataset")


def _spec(helper) -> DatasetName:
    return DatasetName(helper.get_namespace(), helper.get_name())


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/data/orders", lambda: naming.LocalFileSystem(path="/data/orders")),
        ("file:///data/orders/", lambda: naming.LocalFileSystem(path="/data/orders")),
        ("s3://lake/delta/orders", lambda: naming.S3(bucket_name="lake", object_key="delta/orders")),
        ("s3a://lake/delta/orders", lambda: naming.S3(bucket_name="lake", object_key="delta/orders")),
        ("gs://lake/orders", lambda: naming.GCS(bucket_name="lake", object_key="orders")),
        (
            "abfss://box@acct.dfs.core.windows.net/delta/orders",
            lambda: naming.ABFSS(container="box", service="acct", path="delta/orders"),
        ),
        ("hdfs://nn:8020/warehouse/orders", lambda: naming.HDFS("nn", "8020", "/warehouse/orders")),
        ("file://filer/share/orders", lambda: naming.RemoteFileSystem(host="filer", path="/share/orders")),
    ],
)
def test_names_follow_the_openlineage_spec(path: str, expected) -> None:
    assert dataset_name(path) == _spec(expected())


def test_a_relative_local_path_is_named_by_its_absolute_path(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert dataset_name("orders") == DatasetName("file", str(tmp_path / "orders"))


def test_an_azure_uri_without_account_takes_it_from_the_storage_options(monkeypatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    assert needs_storage_options("az://box/orders")
    assert not needs_storage_options("abfss://box@acct.dfs.core.windows.net/orders")
    assert not needs_storage_options("s3://lake/orders")
    spec = _spec(naming.ABFSS(container="box", service="acct", path="orders"))
    assert dataset_name("az://box/orders", {"AZURE_STORAGE_ACCOUNT_NAME": "acct"}) == spec
    assert dataset_name("az://box/orders", {"account_name": "acct"}) == spec
    # With no account anywhere, the URI's own form rather than a made-up account.
    assert dataset_name("az://box/orders") == DatasetName("az://box", "orders")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    assert dataset_name("az://box/orders") == spec


def test_the_asset_of_an_event_trigger_is_the_dataset_the_operators_write(tmp_path) -> None:
    """DeltaTableEventTrigger fires for an Asset named by the table's URI, as
    dags_examples/delta_asset_events.py does; OpenLineage turns that asset into
    the very dataset the operators name as their output."""
    pytest.importorskip("airflow.providers.openlineage")
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset
    from airflow.sdk import Asset

    table = tmp_path / "delta" / "orders"
    converted = translate_airflow_asset(Asset(name="orders", uri=table.as_uri()), None)
    assert DatasetName(converted.namespace, converted.name) == dataset_name(str(table))


def test_catalog_names_as_the_naming_spec_gives_them() -> None:
    from airflow_delta_provider.lineage.naming import DatasetName, catalog_dataset_name

    assert catalog_dataset_name("/data/t") is None
    assert catalog_dataset_name("hms://db.t", "thrift://hms:9083") == DatasetName("hive://hms:9083", "db.t")
    assert catalog_dataset_name("glue://db.t", "eu-west-1") == DatasetName("arn:aws:glue:eu-west-1", "table/db/t")
    assert catalog_dataset_name("uc://main.sales.t", "http://uc:8080/") == DatasetName("http://uc:8080", "main.sales.t")
