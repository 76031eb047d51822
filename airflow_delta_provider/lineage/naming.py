"""OpenLineage dataset names of tables and source paths.

OpenLineage names a dataset by a namespace (where it lives) and a name (what
it is there); a Delta table is named by its root folder, since the naming
spec has no ``delta`` scheme (https://openlineage.io/docs/spec/naming):

========================  =====================================================  =====================
storage                   namespace                                              name
========================  =====================================================  =====================
local path, ``file://``   ``file``                                               the absolute path
S3 (``s3a://``, ...)      ``s3://{bucket}``                                      the key prefix
GCS                       ``gs://{bucket}``                                      the key prefix
Azure (``abfss://``,      ``abfss://{container}@{account}.dfs.core.windows.net``  the path
``az://``)
anything else             ``{scheme}://{authority}``                             the path
========================  =====================================================  =====================

OpenLineage's Spark integration names the same tables the same way, so a
Spark job's lineage and an Airflow task's meet on one dataset.

Pure string work: nothing here imports OpenLineage or opens a store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit

#: Where an ``az://container/path`` URI's storage account may be configured.
_AZURE_ACCOUNT_KEYS = ("azure_storage_account_name", "account_name")


class DatasetName(NamedTuple):
    """An OpenLineage dataset identity."""

    namespace: str
    name: str


def dataset_name(path: str, storage_options: Mapping[str, Any] | None = None) -> DatasetName:
    """The OpenLineage identity of a table root or a source path.

    ``storage_options`` (or the environment) supply the Azure storage account
    when an ``az://`` URI leaves it out; without one the namespace stays
    ``az://{container}``.
    """
    from airflow_delta_provider.delta.errors import InvalidInputError
    from airflow_delta_provider.delta.storage.location import parse_location

    try:
        location = parse_location(path)
    except InvalidInputError:
        return _other_scheme(path)
    if location.is_local:
        return DatasetName("file", location.path)
    name = location.path or "/"
    if location.scheme == "az":
        account = location.account or _azure_account(storage_options)
        if account is None:
            return DatasetName(f"az://{location.bucket}", name)
        return DatasetName(f"abfss://{location.bucket}@{account}.dfs.core.windows.net", name)
    return DatasetName(f"{location.scheme}://{location.bucket}", name)


def catalog_dataset_name(reference: str, catalog_url: str | None = None) -> DatasetName | None:
    """The OpenLineage identity of a catalog name (the ``symlinks`` facet's), or None for a path.

    As the naming spec and the Spark integration name them: a Hive Metastore
    table is ``hive://{host}:{port}`` and ``{database}.{table}``, a Glue table
    ``arn:aws:glue:{region}`` and ``table/{database}/{table}``; a Unity Catalog
    table is its server's URL and ``{catalog}.{schema}.{table}``.
    """
    from airflow_delta_provider.delta.catalog.reference import GLUE, HIVE, parse_reference

    ref = parse_reference(reference)
    if ref is None:
        return None
    if ref.kind == HIVE:
        host = urlsplit(catalog_url).netloc if catalog_url else "metastore"
        return DatasetName(f"hive://{host}", ref.name)
    if ref.kind == GLUE:
        region = catalog_url or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        return DatasetName(f"arn:aws:glue:{region}", f"table/{'/'.join(ref.parts)}")
    return DatasetName((catalog_url or "uc://").rstrip("/"), ref.name)


def _other_scheme(path: str) -> DatasetName:
    """A URI the core does not store tables at (``hdfs://``, ``file://host/``): the spec's generic form."""
    parts = urlsplit(path)
    return DatasetName(f"{parts.scheme}://{parts.netloc}", parts.path or "/")


def _azure_account(storage_options: Mapping[str, Any] | None) -> str | None:
    """The storage account from the options (any case), else ``AZURE_STORAGE_ACCOUNT_NAME``."""
    lowered = {str(k).lower(): v for k, v in (storage_options or {}).items()}
    for key in _AZURE_ACCOUNT_KEYS:
        if lowered.get(key):
            return str(lowered[key])
    return os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or None


def needs_storage_options(path: str) -> bool:
    """Whether :func:`dataset_name` may need ``storage_options`` for ``path``:
    only an Azure URI that does not name its account. Callers then skip a
    connection lookup for every other table."""
    parts = urlsplit(path)
    return parts.scheme.lower() in ("az", "azure", "abfs", "abfss") and "@" not in parts.netloc
