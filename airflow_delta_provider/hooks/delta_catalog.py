"""Catalog settings from an Airflow connection (``catalog_conn_id``).

A table named ``uc://``, ``glue://`` or ``hms://`` is resolved with the
settings of ``catalog_conn_id``, or, without one, of the environment
(:class:`~airflow_delta_provider.delta.catalog.settings.CatalogSettings`).
The ecosystem's connection types are used where one exists:

``unity_catalog`` (this provider's)
    host: the server's URL (``http://uc:8080`` or a Databricks workspace URL);
    password: the bearer token. Unity Catalog's open-source server speaks the
    REST API Databricks does, and no other provider has a type for it.
``databricks`` (apache-airflow-providers-databricks's)
    host and a personal access token (password, or extra ``token``): Unity
    Catalog as a Databricks workspace serves it.
``aws``
    AWS Glue: the keys, ``region_name``, ``endpoint_url`` (or
    ``service_config.glue.endpoint_url``), read as ``storage_conn_id`` reads them.
``hive_metastore`` (apache-airflow-providers-apache-hive's)
    host and port of the metastore's Thrift service.

The token and keys stay in this process, and in the environment of a
spark-submit this hook's callers start; never in argv, a log or XCom.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from airflow.sdk.bases.hook import BaseHook
from airflow.sdk.exceptions import AirflowException

UNITY_CATALOG_CONN_TYPE = "unity_catalog"


class DeltaCatalogHook(BaseHook):
    """The catalog settings of a connection: ``unity_catalog``, ``databricks``, ``aws`` or ``hive_metastore``."""

    conn_name_attr = "catalog_conn_id"
    default_conn_name = "unity_catalog_default"
    conn_type = UNITY_CATALOG_CONN_TYPE
    hook_name = "Unity Catalog (Delta Lake tables by name)"

    def __init__(self, catalog_conn_id: str | None = None) -> None:
        super().__init__()
        self.catalog_conn_id = catalog_conn_id

    def settings(self) -> Any:
        """The :class:`~airflow_delta_provider.delta.catalog.settings.CatalogSettings` to resolve names with."""
        from airflow_delta_provider.delta.catalog.settings import CatalogSettings

        base = CatalogSettings.from_env()
        if not self.catalog_conn_id:
            return base
        conn = self.get_connection(self.catalog_conn_id)
        extra = conn.extra_dejson or {}
        if conn.conn_type in (UNITY_CATALOG_CONN_TYPE, "databricks"):
            host = str(conn.host or "")
            if host and "://" not in host:
                scheme = conn.schema or ("https" if conn.conn_type == "databricks" else "http")
                host = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
            token = conn.password or extra.get("token")
            return dataclasses.replace(base, unity_url=host or None, unity_token=token or None)
        if conn.conn_type == "aws":
            return dataclasses.replace(base, aws=_glue_arguments(conn, extra))
        if conn.conn_type == "hive_metastore":
            return dataclasses.replace(base, hive_uri=f"thrift://{conn.host}:{conn.port or 9083}")
        raise AirflowException(
            f"connection {conn.conn_id!r} is of type {conn.conn_type!r}; catalog_conn_id takes a unity_catalog, "
            "databricks, aws or hive_metastore connection"
        )

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden-fields": ["schema", "login", "port", "extra"],
            "relabeling": {"host": "Server URL", "password": "Token"},
            "placeholders": {"host": "http://localhost:8080 or https://<workspace>.cloud.databricks.com"},
        }


def resolve_for_reading(
    table_path: str, storage_options: dict[str, str] | None, catalog_conn_id: str | None = None
) -> tuple[str, dict[str, str] | None]:
    """``(location, storage options)`` of a table to read: a catalog name's location, with the
    read-only credentials its catalog vends; a path as it is."""
    location, options, catalog = bind_for_reading(table_path, storage_options, catalog_conn_id)
    if catalog is not None:
        catalog.close()
    return location, options


def bind_for_reading(
    table_path: str, storage_options: dict[str, str] | None, catalog_conn_id: str | None = None
) -> tuple[str, dict[str, str] | None, Any]:
    """:func:`resolve_for_reading`, with the open binding
    (:class:`~airflow_delta_provider.delta.catalog.binding.CatalogTable`) of a catalog
    name, for a reader that outlives its credentials (a sensor's probe); None for a path."""
    from airflow_delta_provider.delta.catalog.binding import bind
    from airflow_delta_provider.delta.catalog.reference import is_catalog_reference

    if not is_catalog_reference(table_path):
        return table_path, storage_options, None
    catalog = bind(table_path, DeltaCatalogHook(catalog_conn_id).settings())
    assert catalog is not None
    try:
        return catalog.location, catalog.storage_options(storage_options), catalog
    except BaseException:
        catalog.close()
        raise


def _glue_arguments(conn: Any, extra: dict[str, Any]) -> dict[str, str]:
    """boto3 arguments for Glue from an ``aws`` connection (its keys as ``storage_conn_id`` reads them)."""
    from airflow_delta_provider.utils.storage_connection import settings_from_connection

    store = settings_from_connection(conn)
    endpoint = extra.get("endpoint_url") or ((extra.get("service_config") or {}).get("glue") or {}).get("endpoint_url")
    out = {
        "aws_access_key_id": store.get("AWS_ACCESS_KEY_ID"),
        "aws_secret_access_key": store.get("AWS_SECRET_ACCESS_KEY"),
        "aws_session_token": store.get("AWS_SESSION_TOKEN"),
        "region_name": store.get("AWS_REGION"),
        "endpoint_url": endpoint,
        "catalog_id": extra.get("catalog_id"),
    }
    return {k: str(v) for k, v in out.items() if v}


__all__ = ["UNITY_CATALOG_CONN_TYPE", "DeltaCatalogHook", "bind_for_reading", "resolve_for_reading"]
