"""The paths of the Delta pages in Airflow's UI, shared by the plugin and the operators' extra link.

A table is named in a path by :func:`table_id`, a digest of its asset URI
(:func:`~airflow_delta_provider.assets.uri.table_asset_uri`): a path never
carries the table's location, and every spelling of one table's path gives
one id. Paths are absolute from the api-server's root (``[api] base_url``'s
path, when Airflow is served under one).

Importing this module imports neither the core nor pyarrow.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, urlsplit

#: Where the plugin's FastAPI app is mounted on the api-server.
URL_PREFIX = "/delta"


def table_id(asset_uri: str) -> str:
    """The id of the table whose asset URI is ``asset_uri`` in the plugin's paths."""
    return hashlib.sha256(asset_uri.encode()).hexdigest()[:16]


def base_path() -> str:
    """The path Airflow's UI is served under ('' at the host's root)."""
    from airflow.configuration import conf

    return urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")


def tables_path() -> str:
    return f"{base_path()}{URL_PREFIX}/tables"


def table_path(asset_uri: str) -> str:
    return f"{tables_path()}/{table_id(asset_uri)}"


def version_path(asset_uri: str, version: int) -> str:
    return f"{table_path(asset_uri)}/versions/{int(version)}"


def task_instance_path(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """A task instance's page in Airflow's UI."""
    path = f"{base_path()}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/tasks/{quote(task_id, safe='')}"
    return path + (f"/mapped/{map_index}" if map_index >= 0 else "")


__all__ = ["URL_PREFIX", "table_id", "table_path", "tables_path", "task_instance_path", "version_path"]
