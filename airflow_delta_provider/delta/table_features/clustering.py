"""The ``clustering`` table feature (liquid clustering).

A clustered table names its clustering columns, by their physical paths, in
the ``delta.clustering`` domain (``domainMetadata``), as delta-spark's
``ClusteringMetadataDomain``: ``{"clusteringColumns": [["a"], ["b", "c"]], "domainName": "delta.clustering"}``;
``CLUSTER BY NONE`` leaves the list empty. The protocol lists the writer
features ``clustering`` and ``domainMetadata`` (``ClusteringTableFeature``
requires the second). As delta-spark's ``ClusteredTableUtils``:

- at most :data:`MAX_COLUMNS` clustering columns, each one that can lay out
  files (:mod:`airflow_delta_provider.delta.schema.layout_columns`);
- a clustered table is never partitioned, and is never Z-ordered;
- a clustering column cannot be dropped.

OPTIMIZE clusters the files (:mod:`airflow_delta_provider.operations.optimize.spark`)
and marks each file it writes ``clusteringProvider: "liquid"``, with the
``ZCUBE_ID`` and ``ZCUBE_ZORDER_BY`` tags delta-spark's ``ZCubeInfo`` sets;
:func:`files_to_cluster` picks the files the next OPTIMIZE rewrites, as
delta-spark OSS picks them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from typing import Protocol as Structural

from airflow_delta_provider.delta.actions.model import AddFile, DomainMetadata, Protocol
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.schema.fields import walk_fields
from airflow_delta_provider.delta.schema.layout_columns import check_layout_columns
from airflow_delta_provider.delta.schema.types import FieldPath
from airflow_delta_provider.delta.table_features import features
from airflow_delta_provider.delta.table_features.column_mapping import ColumnMapping

#: The domain that holds the clustering columns.
DOMAIN = "delta.clustering"
#: The ``clusteringProvider`` of the files OPTIMIZE clusters (delta-spark's ``ClusteredTableUtils.clusteringProvider``).
PROVIDER = "liquid"
#: Clustering columns at most (delta-spark's ``spark.databricks.io.skipping.mdc.maxNumClusteringColumns`` default).
MAX_COLUMNS = 4
#: The file tags of delta-spark's ``ZCubeInfo``: the cube a file belongs to, and the columns it was clustered by.
ZCUBE_ID_TAG, ZCUBE_ZORDER_BY_TAG = "ZCUBE_ID", "ZCUBE_ZORDER_BY"


class ClusteredTable(Structural):
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


def check_columns(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    columns: Sequence[str],
) -> list[str]:
    """The clustering ``columns`` as the schema spells them; refused: more than
    :data:`MAX_COLUMNS`, a partitioned table, and columns that cannot lay out
    files (delta-spark's ``validateClusteringColumnsInStatsSchema``)."""
    if partition_columns:
        raise InvalidInputError(
            f"a table cannot be both partitioned (by {list(partition_columns)}) and clustered, as delta-spark "
            "refuses (clusterByWithPartitionedBy): drop partition_by, or cluster_by"
        )
    if len(columns) > MAX_COLUMNS:
        raise InvalidInputError(
            f"a table is clustered by {MAX_COLUMNS} columns at most, not {len(columns)}: {list(columns)}"
        )
    return check_layout_columns(schema, (), configuration, columns, "cluster by")


def domain_action(physical_columns: Sequence[str]) -> DomainMetadata:
    """The ``delta.clustering`` domain naming these top-level physical columns (none: CLUSTER BY NONE)."""
    config = {"clusteringColumns": [[c] for c in physical_columns], "domainName": DOMAIN}  # as delta-spark 4.4
    return DomainMetadata(DOMAIN, json.dumps(config, separators=(",", ":")))


def with_features(protocol: Protocol) -> Protocol:
    """``protocol`` listing the ``clustering`` and ``domainMetadata`` writer
    features (writer version 7, the reader version kept, as delta-spark
    upgrades it for a clustered table)."""
    _readers, writers = features.listed_features(protocol)
    wanted = {features.CLUSTERING, features.DOMAIN_METADATA}
    if wanted <= writers:
        return protocol
    return Protocol(
        min_reader_version=protocol.min_reader_version,
        min_writer_version=7,
        reader_features=protocol.reader_features if protocol.min_reader_version >= 3 else None,
        writer_features=tuple(sorted(writers | wanted)),
    )


def is_clustered_by(add: AddFile, columns: Sequence[str]) -> bool:
    """Whether OPTIMIZE already clustered ``add`` by these (logical) columns:
    it carries the ``liquid`` provider and, when tagged, was clustered by the
    same columns (delta-spark's ``ClusteringStrategy`` reclusters the others)."""
    if add.clustering_provider != PROVIDER:
        return False
    by = (add.tags or {}).get(ZCUBE_ZORDER_BY_TAG)
    if by is None:
        return True
    try:
        return [c.lower() for c in json.loads(by)] == [c.lower() for c in columns]
    except (ValueError, TypeError, AttributeError):
        return False


#: delta-spark's ``optimize.clustering.mergeStrategy.minCubeSize.threshold``
#: default: 100 times its OPTIMIZE ``maxFileSize`` (1 GiB). A ZCube at least
#: this large is complete, and OPTIMIZE leaves its files alone.
DEFAULT_MIN_CUBE_SIZE = 100 * 1024**3


def files_to_cluster(
    files: Sequence[AddFile], columns: Sequence[str], *, full: bool = False, min_cube_size: int = DEFAULT_MIN_CUBE_SIZE
) -> list[AddFile]:
    """The files an OPTIMIZE of a table clustered by ``columns`` rewrites,
    as delta-spark's ``ClusteringStrategy.applyMinZCube`` picks them:

    - candidates are the files not yet clustered and those clustered
      (``liquid``) by the same columns; files clustered by other columns, or
      by another provider, are left alone unless ``full``, which adds them;
    - candidates in a ZCube (``ZCUBE_ID``) of ``min_cube_size`` bytes or more
      are dropped (``ZCube.filterOutLargeZCubes``): a partial ZCube is merged
      again with the new files, a complete one stays;
    - nothing, when what is left is one ZCube and no file outside a ZCube
      (``ZCube.filterOutSingleZCubes``): it is clustered already.

    delta-spark OSS looks at ZCube sizes only, not at the files' value
    ranges, and nor does this."""
    wanted = [c.lower() for c in columns]
    candidates: list[AddFile] = []
    skipped: list[AddFile] = []
    for f in sorted(files, key=lambda f: (_cube_id(f) is not None, _cube_id(f) or "", f.path)):
        same_provider = f.clustering_provider in (None, PROVIDER)
        by = _zorder_by(f)
        (candidates if same_provider and (by is None or by == wanted) else skipped).append(f)
    cube_sizes: dict[str, int] = {}
    for f in candidates:
        if (cube := _cube_id(f)) is not None:
            cube_sizes[cube] = cube_sizes.get(cube, 0) + f.size
    small = [f for f in candidates if (cube := _cube_id(f)) is None or cube_sizes[cube] < min_cube_size]
    if full and skipped:
        return small + skipped
    outside_cubes = any(_cube_id(f) is None for f in small)
    if not outside_cubes and len({_cube_id(f) for f in small}) <= 1:
        return []
    return small


def _cube_id(add: AddFile) -> str | None:
    """The file's ZCube, as delta-spark's ``ZCubeInfo.getForFile`` reads it (both tags, or none)."""
    tags = add.tags or {}
    if ZCUBE_ID_TAG in tags and ZCUBE_ZORDER_BY_TAG in tags:
        return tags[ZCUBE_ID_TAG]
    return None


def _zorder_by(add: AddFile) -> list[str] | None:
    """The columns a file was clustered by (lower case); None when it says none."""
    by = (add.tags or {}).get(ZCUBE_ZORDER_BY_TAG)
    if by is None:
        return None
    try:
        return [str(c).lower() for c in json.loads(by)]
    except (ValueError, TypeError):
        return ["?"]  # unreadable: not the table's columns


def clustered_file(add: AddFile, columns: Sequence[str], cube_id: str) -> AddFile:
    """``add`` as OPTIMIZE writes it on a clustered table (delta-spark's ``ClusteringStrategy.tagAddFile``)."""
    tags = {**(add.tags or {}), ZCUBE_ID_TAG: cube_id, ZCUBE_ZORDER_BY_TAG: json.dumps(list(columns))}
    return replace(add, clustering_provider=PROVIDER, tags=tags)
