"""OpenLineage datasets and facets, built from plain values.

Imported only when lineage is extracted, and only with the ``[openlineage]``
extra installed: it imports the OpenLineage client at module level.

A table dataset carries the ``storage`` facet (layer ``delta``, format
``parquet``), and once a version is known the ``version`` facet (the Delta
version, as a string) and the ``schema`` facet of that version. An output
also carries ``outputStatistics`` and, where the change's column flow is
clear, ``columnLineage``. A table named in a catalog carries ``symlinks``: its
catalog name beside the storage one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    dataset_version_dataset,
    output_statistics_output_dataset,
    schema_dataset,
    storage_dataset,
    symlinks_dataset,
)

from airflow_delta_provider.delta.schema.types import type_name
from airflow_delta_provider.lineage.columns import ColumnLineage, Edge
from airflow_delta_provider.lineage.naming import DatasetName

#: Children of an array and of a map in the schema facet, as OpenLineage's Spark integration names them.
_ELEMENT, _KEY, _VALUE = "_element", "key", "value"


def table_facets(version: int | None = None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The dataset facets of a Delta table, at ``version`` when known."""
    facets: dict[str, Any] = {
        "storage": storage_dataset.StorageDatasetFacet(storageLayer="delta", fileFormat="parquet")
    }
    if version is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(version))
    if schema is not None:
        facets["schema"] = schema_facet(schema)
    return facets


def symlinks_facet(name: DatasetName) -> symlinks_dataset.SymlinksDatasetFacet:
    """The table's name in a catalog, beside its storage name, as OpenLineage's Spark integration gives it."""
    return symlinks_dataset.SymlinksDatasetFacet(
        identifiers=[symlinks_dataset.Identifier(namespace=name.namespace, name=name.name, type="TABLE")]
    )


def schema_facet(schema: Mapping[str, Any]) -> schema_dataset.SchemaDatasetFacet:
    """A Delta schema (JSON) as OpenLineage's schema facet, nested types included."""
    return schema_dataset.SchemaDatasetFacet(fields=_struct_fields(schema))


def _struct_fields(struct: Mapping[str, Any]) -> list[schema_dataset.SchemaDatasetFacetFields]:
    return [
        _field(f["name"], f["type"], (f.get("metadata") or {}).get("comment"), position)
        for position, f in enumerate(struct.get("fields", []), start=1)
    ]


def _field(
    name: str, delta_type: Any, comment: str | None = None, position: int | None = None
) -> schema_dataset.SchemaDatasetFacetFields:
    kind = type_name(delta_type)
    if kind == "struct":
        children = _struct_fields(delta_type)
    elif kind == "array":
        children = [_field(_ELEMENT, delta_type["elementType"])]
    elif kind == "map":
        children = [_field(_KEY, delta_type["keyType"]), _field(_VALUE, delta_type["valueType"])]
    else:
        children = []
    return schema_dataset.SchemaDatasetFacetFields(
        name=name, type=kind, description=comment, ordinal_position=position, fields=children
    )


def written(metrics: Mapping[str, Any]) -> tuple[int | None, int | None, int | None]:
    """(rows, bytes, files) a commit wrote into new data files, from its operationMetrics.

    APPEND reports ``numOutputRows``/``numOutputBytes``/``numFiles``. UPDATE,
    DELETE and REORG report ``numAddedBytes``/``numAddedFiles``, and the rows
    they wrote are the changed ones plus the ones copied beside them
    (``numUpdatedRows`` + ``numCopiedRows``; a DELETE writes only copies).
    MERGE reports ``numOutputRows`` with ``numTargetBytesAdded``/``numTargetFilesAdded``.
    """
    rows = metrics.get("numOutputRows")
    if rows is None and ({"numUpdatedRows", "numCopiedRows"} & metrics.keys()):
        rows = int(metrics.get("numUpdatedRows", 0)) + int(metrics.get("numCopiedRows", 0))
    size = metrics.get("numOutputBytes", metrics.get("numAddedBytes", metrics.get("numTargetBytesAdded")))
    files = metrics.get("numFiles", metrics.get("numAddedFiles", metrics.get("numTargetFilesAdded")))
    return rows, size, files


def output_statistics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``{"outputStatistics": facet}``, or ``{}`` when the commit wrote no data files."""
    rows, size, files = written(metrics)
    if rows is None and size is None and files is None:
        return {}
    return {
        "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=rows, size=size, fileCount=files
        )
    }


def column_lineage_facet(
    lineage: ColumnLineage, source: DatasetName
) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    """``lineage`` as OpenLineage's facet, every input column belonging to ``source``."""

    def inputs(edges: tuple[Edge, ...]) -> list[column_lineage_dataset.InputField]:
        by_column: dict[str, list[column_lineage_dataset.Transformation]] = {}
        for edge in edges:
            by_column.setdefault(edge.column, []).append(
                column_lineage_dataset.Transformation(type=edge.type, subtype=edge.subtype)
            )
        return [
            column_lineage_dataset.InputField(
                namespace=source.namespace, name=source.name, field=column, transformations=transformations
            )
            for column, transformations in by_column.items()
        ]

    return column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            column: column_lineage_dataset.Fields(inputFields=inputs(edges)) for column, edges in lineage.fields.items()
        },
        dataset=inputs(lineage.dataset),
    )


def input_dataset(name: DatasetName, facets: dict[str, Any] | None = None) -> InputDataset:
    return InputDataset(namespace=name.namespace, name=name.name, facets=facets or {})


def output_dataset(
    name: DatasetName, facets: dict[str, Any] | None = None, output_facets: dict[str, Any] | None = None
) -> OutputDataset:
    return OutputDataset(
        namespace=name.namespace, name=name.name, facets=facets or {}, outputFacets=output_facets or {}
    )
