"""Credentials for Spark's Hadoop connectors in ``hadoop`` I/O mode.

No connector jar can be installed here, so the mapping is checked as data
and its application on a real session's Hadoop configuration; reading
through ``hadoop-aws`` itself is left to clusters that have it.
"""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.spark.runtime import io_mode
from airflow_delta_provider.spark.runtime.hadoop_store_conf import apply_hadoop_store_settings, hadoop_store_settings

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "AKID",
    "AWS_SECRET_ACCESS_KEY": "s3cr3t",
    "AWS_REGION": "eu-west-1",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    "HOME": "/root",
}


def test_s3_settings_are_scoped_to_the_bucket():
    settings = hadoop_store_settings(parse_location("s3://bkt/t"), S3_ENV)
    assert settings == {
        "fs.s3a.bucket.bkt.access.key": "AKID",
        "fs.s3a.bucket.bkt.secret.key": "s3cr3t",
        "fs.s3a.bucket.bkt.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.bucket.bkt.endpoint.region": "eu-west-1",
        "fs.s3a.bucket.bkt.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.bucket.bkt.path.style.access": "true",
        "fs.s3a.bucket.bkt.connection.ssl.enabled": "false",
    }


def test_s3_session_credentials_use_the_temporary_provider():
    env = {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T"}
    settings = hadoop_store_settings(parse_location("s3a://bkt"), env)
    assert settings["fs.s3a.bucket.bkt.session.token"] == "T"
    assert settings["fs.s3a.bucket.bkt.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")


def test_no_variables_leave_the_connectors_own_chain_alone():
    assert hadoop_store_settings(parse_location("s3://bkt/t"), {}) == {}
    assert hadoop_store_settings(parse_location("abfss://c@acct.dfs.core.windows.net/t"), {}) == {}
    assert hadoop_store_settings(parse_location("gs://bkt/t"), {}) == {}
    assert hadoop_store_settings(parse_location("/tmp/t"), S3_ENV) == {}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AZURE_STORAGE_ACCOUNT_KEY": "k=="}, {"fs.azure.account.key.acct.dfs.core.windows.net": "k=="}),
        (
            {"AZURE_STORAGE_SAS_KEY": "?sv=1&sig=x"},
            {
                "fs.azure.account.auth.type.acct.dfs.core.windows.net": "SAS",
                "fs.azure.sas.fixed.token.acct.dfs.core.windows.net": "sv=1&sig=x",
            },
        ),
    ],
)
def test_azure_settings_are_scoped_to_the_account(env, expected):
    assert hadoop_store_settings(parse_location("abfss://c@acct.dfs.core.windows.net/t"), env) == expected


def test_an_emulator_endpoint_is_reached_through_the_blob_endpoint_as_a_flat_namespace():
    env = {"AZURE_STORAGE_ACCOUNT_KEY": "k==", "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:10000/acct"}
    host = "acct.dfs.core.windows.net"
    assert hadoop_store_settings(parse_location(f"abfs://c@{host}/t"), env) == {
        f"fs.azure.account.key.{host}": "k==",
        f"fs.azure.abfs.endpoint.{host}": "127.0.0.1:10000",
        f"fs.azure.account.hns.enabled.{host}": "false",
        f"fs.azure.fns.account.service.type.{host}": "BLOB",
        # plain HTTP: ABFS reads this one globally (abfss:// stays TLS)
        "fs.azure.always.use.https": "false",
        f"fs.azure.networking.library.{host}": "JDK_HTTP_URL_CONNECTION",
    }
    tls = hadoop_store_settings(
        parse_location(f"abfss://c@{host}/t"), {**env, "AZURE_STORAGE_ENDPOINT": "https://emu:443/acct"}
    )
    assert tls[f"fs.azure.abfs.endpoint.{host}"] == "emu:443"
    assert "fs.azure.always.use.https" not in tls


@pytest.mark.parametrize(
    "endpoint", ["https://acct.blob.core.windows.net", "http://127.0.0.1:10000/other", "http://127.0.0.1:bad/acct"]
)
def test_other_azure_endpoints_are_left_to_the_cluster(endpoint):
    env = {"AZURE_STORAGE_ACCOUNT_KEY": "k==", "AZURE_STORAGE_ENDPOINT": endpoint}
    settings = hadoop_store_settings(parse_location("abfss://c@acct.dfs.core.windows.net/t"), env)
    assert settings == {"fs.azure.account.key.acct.dfs.core.windows.net": "k=="}


def test_azure_service_principal():
    env = {"AZURE_CLIENT_ID": "id", "AZURE_CLIENT_SECRET": "sec", "AZURE_TENANT_ID": "ten"}
    settings = hadoop_store_settings(parse_location("abfss://c@acct.dfs.core.windows.net/t"), env)
    host = "acct.dfs.core.windows.net"
    assert settings[f"fs.azure.account.auth.type.{host}"] == "OAuth"
    assert settings[f"fs.azure.account.oauth2.client.endpoint.{host}"] == (
        "https://login.microsoftonline.com/ten/oauth2/token"
    )
    assert settings[f"fs.azure.account.oauth2.client.secret.{host}"] == "sec"


def test_gcs_key_file():
    settings = hadoop_store_settings(parse_location("gs://bkt/t"), {"GOOGLE_SERVICE_ACCOUNT": "/keys/sa.json"})
    assert settings["fs.gs.auth.service.account.json.keyfile"] == "/keys/sa.json"
    assert settings["google.cloud.auth.service.account.json.keyfile"] == "/keys/sa.json"


def test_settings_reach_the_sessions_hadoop_conf_and_the_clusters_win(spark, monkeypatch):
    bucket = "hadoop-conf-test"
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    mine = f"fs.s3a.bucket.{bucket}.endpoint.region"
    cluster = f"fs.s3a.bucket.{bucket}.endpoint"
    conf.set(cluster, "https://cluster.example")
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    try:
        applied = apply_hadoop_store_settings(spark, parse_location(f"s3://{bucket}/t"))
        assert mine in applied and cluster not in applied
        assert conf.get(mine) == "eu-west-1"
        assert conf.get(cluster) == "https://cluster.example"
        # Hadoop settings, not Spark configuration: nothing shows in the app's conf.
        assert not [v for _k, v in spark.sparkContext.getConf().getAll() if "s3cr3t" in v]
    finally:
        for key in hadoop_store_settings(parse_location(f"s3://{bucket}/t"), S3_ENV):
            conf.unset(key)
        conf.unset(cluster)


def test_resolving_hadoop_mode_on_a_store_applies_the_settings(spark, monkeypatch):
    bucket = "resolve-test"
    monkeypatch.setattr(io_mode, "hadoop_filesystem_available", lambda _spark, scheme: scheme == "s3a")
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    try:
        assert io_mode.resolve_io(spark, f"s3://{bucket}/t", "auto") == "hadoop"
        assert conf.get(f"fs.s3a.bucket.{bucket}.access.key") == "AKID"
    finally:
        for key in hadoop_store_settings(parse_location(f"s3://{bucket}/t"), S3_ENV):
            conf.unset(key)


def test_unity_catalogs_vended_credentials_become_the_tables_own_settings():
    """What Unity Catalog vends (AWS temporary keys, an Azure SAS) reaches the connector
    scoped to the table's bucket or account, as a connection's keys do."""
    from airflow_delta_provider.delta.catalog.unity import vended

    aws = vended(
        {"aws_temp_credentials": {"access_key_id": "AK", "secret_access_key": "SK", "session_token": "ST"}}, True
    )
    settings = hadoop_store_settings(parse_location("s3://lake/orders"), aws.options)
    assert settings["fs.s3a.bucket.lake.session.token"] == "ST"
    assert settings["fs.s3a.bucket.lake.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    sas = vended({"azure_user_delegation_sas": {"sas_token": "sv=1&sig=x"}}, False)
    settings = hadoop_store_settings(parse_location("abfss://c@acct.dfs.core.windows.net/t"), sas.options)
    assert settings["fs.azure.sas.fixed.token.acct.dfs.core.windows.net"] == "sv=1&sig=x"
