"""The ``clustering`` table feature (liquid clustering).

A clustered table names its clustering columns, by their physical paths, in
the ``delta.clustering`` domain (``domainMetadata``). We keep the domain as
it is, refuse to drop a clustering column, and refuse Z-order on such a
table, as delta-spark does; we never recluster.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from airflow_delta_provider.delta.actions.model import DomainMetadata
from airflow_delta_provider.delta.schema.fields import walk_fields
from airflow_delta_provider.delta.schema.types import FieldPath
from airflow_delta_provider.delta.table_features.column_mapping import ColumnMapping

#: The domain that holds the clustering columns.
DOMAIN = "delta.clustering"


class ClusteredTable(Protocol):
    """What :func:`clustering_columns` reads of a table version (a
    :class:`~airflow_delta_provider.delta.snapshot.Snapshot`)."""

    @property
    def domain_metadata(self) -> Mapping[str, DomainMetadata]: ...

    @property
    def schema(self) -> dict[str, Any]: ...

    @property
    def column_mapping(self) -> ColumnMapping: ...


def is_clustered(domain_metadata: Mapping[str, DomainMetadata]) -> bool:
    """Whether the table's domains hold a live ``delta.clustering`` one."""
    domain = domain_metadata.get(DOMAIN)
    return domain is not None and not domain.removed


def clustering_columns(snapshot: ClusteredTable) -> list[FieldPath]:
    """The logical paths of a liquid-clustered table's clustering columns (its
    ``delta.clustering`` domain names physical ones); empty when not clustered."""
    domain = snapshot.domain_metadata.get(DOMAIN)
    if domain is None or domain.removed:
        return []
    try:
        physical = [tuple(c) for c in json.loads(domain.configuration or "{}").get("clusteringColumns", [])]
    except (ValueError, TypeError):
        return []
    by_physical = {}
    for path, _f in walk_fields(snapshot.schema):
        by_physical[tuple(snapshot.column_mapping.physical_path(path))] = path
    return [by_physical.get(p, p) for p in physical]
