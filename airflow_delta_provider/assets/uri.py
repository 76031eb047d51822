"""The URI of a Delta table's Airflow ``Asset``.

One table, one URI, whatever spelling the DAG used for its path: a local path
and its ``file://`` URI, ``s3a://`` and ``s3://``, ``abfss://`` and ``az://``
name the same table, so they give the same URI. It is built from the
table's OpenLineage identity (:mod:`airflow_delta_provider.lineage.naming`),
so Airflow's asset graph and OpenLineage's datasets agree:

======================  ==============================================
table path              asset URI
======================  ==============================================
``/data/orders``        ``file:///data/orders``
``s3a://lake/orders``   ``s3://lake/orders``
``az://c/orders``       ``abfss://c@{account}.dfs.core.windows.net/orders``
======================  ==============================================
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any


def table_asset_uri(table_path: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """The asset URI of the table at ``table_path`` (see the module's table).

    ``storage_options`` (or ``AZURE_STORAGE_ACCOUNT_NAME``) supply the Azure
    storage account when an ``az://`` URI leaves it out.
    """
    from airflow_delta_provider.lineage.naming import dataset_name  # parsing a DAG loads no lineage code

    namespace, name = dataset_name(table_path, storage_options)
    if namespace == "file":
        return PurePosixPath(name).as_uri()
    return f"{namespace}/{name.lstrip('/')}"


__all__ = ["table_asset_uri"]
