"""Store credentials for Spark's Hadoop connectors, in ``hadoop`` I/O mode.

In ``hadoop`` mode Spark reads and writes data files through the cluster's
connector (``hadoop-aws`` for ``s3a://``, ABFS, the GCS connector). The core
reads the same store through obstore from the cloud variables of the
driver's environment (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``), which the hook
sets from an Airflow connection. :func:`hadoop_store_settings` maps those
variables to the connector's own settings, scoped to the one bucket or
account of the table (S3A per-bucket settings, ABFS per-account settings),
and :func:`apply_hadoop_store_settings` sets them on the session's Hadoop
configuration inside the application: they are never a spark-submit
argument, and a value the cluster already configured wins.

A variable the mapping does not know is left to the connector's own chain
(``hadoop-aws`` reads ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` from the
environment by itself; instance, workload and managed identities need no
setting at all).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from airflow_delta_provider.delta.storage import TableLocation
from airflow_delta_provider.delta.storage.options import credential_env

_TRUE = ("1", "true", "yes", "on")


def hadoop_store_settings(location: TableLocation, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Hadoop settings that give Spark's connector for ``location`` the
    credentials and endpoint of ``environ`` (default ``os.environ``)."""
    env = {k.upper(): v for k, v in credential_env(os.environ if environ is None else environ).items() if v}
    if location.scheme == "s3":
        return _s3a(location.bucket, env)
    if location.scheme == "az" and location.account:
        return _abfs(location.account, env)
    if location.scheme == "gs":
        return _gcs(env)
    return {}


def _s3a(bucket: str, env: Mapping[str, str]) -> dict[str, str]:
    prefix = f"fs.s3a.bucket.{bucket}."
    out: dict[str, str] = {}
    if "AWS_ACCESS_KEY_ID" in env and "AWS_SECRET_ACCESS_KEY" in env:
        out[prefix + "access.key"] = env["AWS_ACCESS_KEY_ID"]
        out[prefix + "secret.key"] = env["AWS_SECRET_ACCESS_KEY"]
        if "AWS_SESSION_TOKEN" in env:
            out[prefix + "session.token"] = env["AWS_SESSION_TOKEN"]
            out[prefix + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            out[prefix + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out[prefix + "endpoint.region"] = region
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
    if endpoint:
        out[prefix + "endpoint"] = endpoint
        # obstore addresses a custom endpoint path-style unless told otherwise.
        virtual = env.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() in _TRUE
        out[prefix + "path.style.access"] = "false" if virtual else "true"
        if endpoint.startswith("http://") or env.get("AWS_ALLOW_HTTP", "").lower() in _TRUE:
            out[prefix + "connection.ssl.enabled"] = "false"
    return out


def _abfs(account: str, env: Mapping[str, str]) -> dict[str, str]:
    host = f"{account}.dfs.core.windows.net"
    return {**_abfs_emulator(account, host, env), **_abfs_credentials(host, env)}


def _abfs_emulator(account: str, host: str, env: Mapping[str, str]) -> dict[str, str]:
    """An endpoint of the emulator's form, ``http://127.0.0.1:10000/<account>``
    (Azurite): ABFS addresses it as ``<host>:<port>``, through its Blob
    endpoint (Azurite has no Data Lake endpoint) as a flat-namespace
    account. Plain HTTP needs ``abfs://`` tables, ABFS's global
    ``always.use.https`` off (``abfss://`` stays TLS) and the JDK's HTTP client
    (hadoop-azure 3.5.0's Apache client fails with "SSL socket factory may
    not be null" without TLS). Any other endpoint is left to the cluster."""
    endpoint = urlsplit(env.get("AZURE_STORAGE_ENDPOINT") or env.get("AZURE_ENDPOINT") or "")
    try:
        port = endpoint.port
    except ValueError:
        return {}
    if not (endpoint.hostname and port and endpoint.path.strip("/") == account):
        return {}
    out = {
        f"fs.azure.abfs.endpoint.{host}": f"{endpoint.hostname}:{port}",
        f"fs.azure.account.hns.enabled.{host}": "false",
        f"fs.azure.fns.account.service.type.{host}": "BLOB",
    }
    if endpoint.scheme == "http":
        out["fs.azure.always.use.https"] = "false"
        out[f"fs.azure.networking.library.{host}"] = "JDK_HTTP_URL_CONNECTION"
    return out


def _abfs_credentials(host: str, env: Mapping[str, str]) -> dict[str, str]:
    key = env.get("AZURE_STORAGE_ACCOUNT_KEY") or env.get("AZURE_STORAGE_ACCESS_KEY")
    if key:
        return {f"fs.azure.account.key.{host}": key}
    sas = env.get("AZURE_STORAGE_SAS_KEY") or env.get("AZURE_STORAGE_SAS_TOKEN")
    if sas:
        return {f"fs.azure.account.auth.type.{host}": "SAS", f"fs.azure.sas.fixed.token.{host}": sas.lstrip("?")}
    client_id = env.get("AZURE_CLIENT_ID") or env.get("AZURE_STORAGE_CLIENT_ID")
    secret = env.get("AZURE_CLIENT_SECRET") or env.get("AZURE_STORAGE_CLIENT_SECRET")
    tenant = env.get("AZURE_TENANT_ID") or env.get("AZURE_STORAGE_TENANT_ID")
    if client_id and secret and tenant:
        return {
            f"fs.azure.account.auth.type.{host}": "OAuth",
            f"fs.azure.account.oauth.provider.type.{host}": (
                "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider"
            ),
            f"fs.azure.account.oauth2.client.endpoint.{host}": (
                f"https://login.microsoftonline.com/{tenant}/oauth2/token"
            ),
            f"fs.azure.account.oauth2.client.id.{host}": client_id,
            f"fs.azure.account.oauth2.client.secret.{host}": secret,
        }
    return {}


def _gcs(env: Mapping[str, str]) -> dict[str, str]:
    keyfile = (
        env.get("GOOGLE_SERVICE_ACCOUNT")
        or env.get("GOOGLE_SERVICE_ACCOUNT_PATH")
        or env.get("GOOGLE_APPLICATION_CREDENTIALS")
    )
    if not keyfile:
        return {}
    # GCS connector 3.x names, then 2.x's.
    return {
        "fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
        "fs.gs.auth.service.account.json.keyfile": keyfile,
        "google.cloud.auth.service.account.json.keyfile": keyfile,
    }


def apply_hadoop_store_settings(spark: Any, location: TableLocation) -> list[str]:
    """Set :func:`hadoop_store_settings` on the session's Hadoop configuration,
    skipping keys the cluster already set; the names set (never values).
    A session without a JVM (Spark Connect) is left as it is."""
    settings = hadoop_store_settings(location)
    if not settings:
        return []
    try:
        conf = spark.sparkContext._jsc.hadoopConfiguration()
    except AttributeError:
        return []
    applied = []
    for key, value in settings.items():
        if conf.get(key) is None:
            conf.set(key, value)
            applied.append(key)
    return applied


__all__ = ["apply_hadoop_store_settings", "hadoop_store_settings"]
