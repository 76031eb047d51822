"""Store credentials from an Airflow connection (``storage_conn_id``).

Without a connection, nothing is configured: the core and the Spark
application use each cloud's own chain (environment variables, instance or
workload identity), as obstore reads it. With one, its fields become the
store settings both sides understand, named as delta-rs and obstore name
them (``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_ACCOUNT_KEY``,
``GOOGLE_SERVICE_ACCOUNT_KEY``, ...):

- in this process they are the core's ``storage_options`` (the hook's log
  reads, sensors, triggers);
- for the Spark application they are environment variables of the
  spark-submit process, and never command-line arguments.

Connection types, read from their documented fields:

``aws``
    login / password: access key id and secret; extra ``aws_session_token``,
    ``region_name``, ``endpoint_url`` (or ``service_config.s3.endpoint_url``).
    An extra with ``role_arn`` or ``profile_name`` needs
    ``apache-airflow-providers-amazon`` (the ``[amazon]`` extra), whose hook
    resolves it to temporary credentials.
``wasb``, ``adls``, ``azure_data_lake``
    login: the storage account (or a service principal's client id with
    extra ``tenant_id``); password: the account key (or the client secret);
    extra ``sas_token``, ``account_name``, ``endpoint``.
``google_cloud_platform``
    extra ``key_path`` (a service-account file) or ``keyfile_dict`` (its JSON).

Any type: extra ``max_retries``, ``retry_timeout``, ``retry_init_backoff``,
``retry_max_backoff``, ``retry_backoff_base`` (the store's retries, see
:mod:`airflow_delta_provider.delta.storage.options`), passed on as
``DELTA_STORE_*`` settings.

Nothing here imports a cloud provider package, pyarrow or obstore.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException

if TYPE_CHECKING:
    from airflow.sdk import Connection

AWS_TYPES = frozenset({"aws"})
AZURE_TYPES = frozenset({"wasb", "adls", "azure_data_lake"})
GCP_TYPES = frozenset({"google_cloud_platform", "gcpbigquery"})
#: The store's retry settings an extra may carry (the core's ``RETRY_KEYS``, not imported: no core here).
RETRY_EXTRAS = ("max_retries", "retry_timeout", "retry_init_backoff", "retry_max_backoff", "retry_backoff_base")


def storage_settings(conn_id: str | None) -> dict[str, str]:
    """The store settings of connection ``conn_id`` (empty for None)."""
    if not conn_id:
        return {}
    from airflow.sdk import BaseHook

    return settings_from_connection(BaseHook.get_connection(conn_id))


async def storage_settings_async(conn_id: str | None) -> dict[str, str]:
    """:func:`storage_settings` for the triggerer's event loop."""
    if not conn_id:
        return {}
    from airflow.sdk import BaseHook

    return settings_from_connection(await BaseHook.aget_connection(conn_id))


def settings_from_connection(conn: Connection) -> dict[str, str]:
    """Store settings from a connection of type aws, wasb/adls or google_cloud_platform."""
    extra = _extra(conn)
    retries = {f"DELTA_STORE_{key.upper()}": str(extra[key]) for key in RETRY_EXTRAS if extra.get(key) is not None}
    if conn.conn_type in AWS_TYPES:
        return {**_aws(conn, extra), **retries}
    if conn.conn_type in AZURE_TYPES:
        return {**_azure(conn, extra), **retries}
    if conn.conn_type in GCP_TYPES:
        return {**_gcp(conn, extra), **retries}
    raise AirflowException(
        f"connection {conn.conn_id!r} is of type {conn.conn_type!r}, which names no object store; "
        "storage_conn_id takes an aws, wasb, adls or google_cloud_platform connection"
    )


def _extra(conn: Connection) -> dict[str, Any]:
    raw = conn.extra_dejson if hasattr(conn, "extra_dejson") else json.loads(conn.extra or "{}")
    # Older UI forms prefix the fields: extra__google_cloud_platform__key_path.
    return {key.split("__")[-1]: value for key, value in (raw or {}).items()}


def _aws(conn: Connection, extra: Mapping[str, Any]) -> dict[str, str]:
    if extra.get("role_arn") or extra.get("profile_name"):
        key_id, secret, token = _aws_provider_credentials(conn.conn_id)
    else:
        key_id, secret, token = conn.login, conn.password, extra.get("aws_session_token")
    endpoint = extra.get("endpoint_url") or ((extra.get("service_config") or {}).get("s3") or {}).get("endpoint_url")
    out = {
        "AWS_ACCESS_KEY_ID": key_id,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_SESSION_TOKEN": token,
        "AWS_REGION": extra.get("region_name"),
        "AWS_ENDPOINT_URL": endpoint,
    }
    if endpoint and str(endpoint).startswith("http://"):
        out["AWS_ALLOW_HTTP"] = "true"
    return {k: str(v) for k, v in out.items() if v}


def _aws_provider_credentials(conn_id: str) -> tuple[str, str, str | None]:
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsGenericHook
    except ImportError:
        raise AirflowException(
            f"connection {conn_id!r} assumes a role or names a profile; that needs "
            "apache-airflow-providers-amazon (pip install 'airflow-delta-provider[amazon]')"
        ) from None
    frozen = AwsGenericHook(aws_conn_id=conn_id, client_type="s3").get_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token


def _azure(conn: Connection, extra: Mapping[str, Any]) -> dict[str, str]:
    tenant = extra.get("tenant_id")
    account = extra.get("account_name") or (conn.host if tenant else conn.login)
    if account and "." in account:  # a host name: <account>.blob.core.windows.net
        account = account.split("://")[-1].split(".")[0]
    out = {"AZURE_STORAGE_ACCOUNT_NAME": account, "AZURE_STORAGE_ENDPOINT": extra.get("endpoint")}
    if tenant:
        out.update(
            {
                "AZURE_STORAGE_TENANT_ID": tenant,
                "AZURE_STORAGE_CLIENT_ID": conn.login,
                "AZURE_STORAGE_CLIENT_SECRET": conn.password,
            }
        )
    elif extra.get("sas_token"):
        out["AZURE_STORAGE_SAS_TOKEN"] = extra["sas_token"]
    else:
        out["AZURE_STORAGE_ACCOUNT_KEY"] = conn.password or extra.get("shared_access_key")
    if out.get("AZURE_STORAGE_ENDPOINT", "") and str(out["AZURE_STORAGE_ENDPOINT"]).startswith("http://"):
        out["AZURE_ALLOW_HTTP"] = "true"
    return {k: str(v) for k, v in out.items() if v}


def _gcp(conn: Connection, extra: Mapping[str, Any]) -> dict[str, str]:
    if extra.get("key_path"):
        return {"GOOGLE_SERVICE_ACCOUNT": str(extra["key_path"])}
    keyfile = extra.get("keyfile_dict")
    if keyfile:
        return {"GOOGLE_SERVICE_ACCOUNT_KEY": keyfile if isinstance(keyfile, str) else json.dumps(keyfile)}
    return {}  # the instance's own service account (GCE, GKE workload identity)


__all__ = ["settings_from_connection", "storage_settings", "storage_settings_async"]
