"""Store settings from Airflow connections (``storage_conn_id``)."""

from __future__ import annotations

import json

import pytest
from airflow.sdk import Connection
from airflow.sdk.exceptions import AirflowException

from airflow_delta_provider.utils.storage_connection import settings_from_connection, storage_settings


def conn(conn_type: str, **fields) -> Connection:
    extra = fields.pop("extra", None)
    return Connection(conn_id="c", conn_type=conn_type, extra=json.dumps(extra) if extra else None, **fields)


def test_aws_keys_region_and_endpoint():
    got = settings_from_connection(
        conn(
            "aws",
            login="AKIA1",
            password="s3cr3t",
            extra={"region_name": "eu-west-1", "endpoint_url": "http://127.0.0.1:9000", "aws_session_token": "tok"},
        )
    )
    assert got == {
        "AWS_ACCESS_KEY_ID": "AKIA1",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "AWS_SESSION_TOKEN": "tok",
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
    }


def test_aws_endpoint_from_service_config_and_https_needs_no_allow_http():
    got = settings_from_connection(
        conn("aws", extra={"service_config": {"s3": {"endpoint_url": "https://minio.example"}}})
    )
    assert got == {"AWS_ENDPOINT_URL": "https://minio.example"}


def test_aws_role_without_the_amazon_provider_is_a_clear_error():
    try:
        import airflow.providers.amazon  # noqa: F401
    except ImportError:
        with pytest.raises(AirflowException, match="apache-airflow-providers-amazon"):
            settings_from_connection(conn("aws", extra={"role_arn": "arn:aws:iam::1:role/x"}))
    else:
        pytest.skip("the amazon provider is installed here")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"login": "acct", "password": "key=="},
            {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "key=="},
        ),
        (
            {"login": "acct", "extra": {"sas_token": "sv=1&sig=x"}},
            {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_SAS_TOKEN": "sv=1&sig=x"},
        ),
        (
            {"host": "acct.blob.core.windows.net", "login": "app", "password": "pw", "extra": {"tenant_id": "t1"}},
            {
                "AZURE_STORAGE_ACCOUNT_NAME": "acct",
                "AZURE_STORAGE_TENANT_ID": "t1",
                "AZURE_STORAGE_CLIENT_ID": "app",
                "AZURE_STORAGE_CLIENT_SECRET": "pw",
            },
        ),
        (
            {"login": "acct", "password": "k", "extra": {"endpoint": "http://127.0.0.1:1/acct"}},
            {
                "AZURE_STORAGE_ACCOUNT_NAME": "acct",
                "AZURE_STORAGE_ACCOUNT_KEY": "k",
                "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:1/acct",
                "AZURE_ALLOW_HTTP": "true",
            },
        ),
    ],
)
@pytest.mark.parametrize("conn_type", ["wasb", "adls"])
def test_azure(conn_type, fields, expected):
    assert settings_from_connection(conn(conn_type, **fields)) == expected


def test_gcp_key_path_keyfile_dict_and_the_instance_chain():
    assert settings_from_connection(conn("google_cloud_platform", extra={"key_path": "/k.json"})) == {
        "GOOGLE_SERVICE_ACCOUNT": "/k.json"
    }
    key = {"type": "service_account", "client_email": "x@y"}
    got = settings_from_connection(
        conn("google_cloud_platform", extra={"extra__google_cloud_platform__keyfile_dict": key})
    )
    assert json.loads(got["GOOGLE_SERVICE_ACCOUNT_KEY"]) == key
    assert settings_from_connection(conn("google_cloud_platform")) == {}


def test_a_connection_that_names_no_store_is_refused():
    with pytest.raises(AirflowException, match="storage_conn_id takes an aws, wasb, adls or google_cloud_platform"):
        settings_from_connection(conn("postgres", host="db"))


def test_no_connection_means_the_cloud_chain(monkeypatch):
    assert storage_settings(None) == {}
    monkeypatch.setenv("AIRFLOW_CONN_MY_S3", json.dumps({"conn_type": "aws", "login": "id", "password": "pw"}))
    assert storage_settings("my_s3") == {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "pw"}


def test_retry_extras_become_the_store_retry_settings():
    from airflow_delta_provider.delta.storage.options import split_options

    extra = {"max_retries": 3, "retry_timeout": "30s", "retry_init_backoff": "200ms", "region_name": "eu-west-1"}
    settings = settings_from_connection(conn("aws", login="k", password="s", extra=extra))
    assert settings["DELTA_STORE_MAX_RETRIES"] == "3" and settings["DELTA_STORE_RETRY_INIT_BACKOFF"] == "200ms"
    retry = split_options(settings).retry
    assert retry["max_retries"] == 3 and retry["retry_timeout"].total_seconds() == 30
    assert retry["backoff"]["init_backoff"].total_seconds() == 0.2
