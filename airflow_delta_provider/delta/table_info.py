"""What a table is, as documents: ``describe`` (the CLI's) and ``detail`` (DESCRIBE DETAIL's).

:func:`detail` has the fields of delta-spark's ``DESCRIBE DETAIL`` (format,
id, name, description, location, createdAt, lastModified, partitionColumns,
clusteringColumns, numFiles, sizeInBytes, properties, minReaderVersion,
minWriterVersion, tableFeatures), plus the version it describes, the schema
(Delta schema JSON) and the protocol action. Times are milliseconds since the
epoch, as in commitInfo. :func:`describe` is the CLI's ``describe`` document,
which adds every live file. Both read only the log (and the checkpoint).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.schema.types import format_path
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table_features.clustering import clustering_columns
from airflow_delta_provider.delta.table_features.features import listed_features

#: DESCRIBE DETAIL's ``format``.
DELTA_FORMAT = "delta"


def detail(snapshot: Snapshot) -> dict[str, Any]:
    """DESCRIBE DETAIL of ``snapshot``, with its version, schema and protocol.

    ``tableFeatures`` are the features the protocol lists or, for a legacy
    protocol, implies (delta-spark's ``implicitlyAndExplicitlySupportedFeatures``), sorted.
    """
    md, proto = snapshot.metadata, snapshot.protocol
    readers, writers = listed_features(proto)
    return {
        "format": DELTA_FORMAT,
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "location": snapshot.table_root,
        "createdAt": md.created_time,
        "lastModified": snapshot.timestamp,
        "partitionColumns": list(md.partition_columns),
        "clusteringColumns": [format_path(path) for path in clustering_columns(snapshot)],
        "numFiles": snapshot.num_files,
        "sizeInBytes": snapshot.size_in_bytes,
        "properties": dict(md.configuration),
        "minReaderVersion": proto.min_reader_version,
        "minWriterVersion": proto.min_writer_version,
        "tableFeatures": sorted(readers | writers),
        "version": snapshot.version,
        "schema": snapshot.schema,
        "protocol": proto.to_json(),
    }


def describe(snapshot: Snapshot) -> dict[str, Any]:
    """The CLI's ``describe`` document of a snapshot."""
    md = snapshot.metadata
    doc: dict[str, Any] = {
        "version": snapshot.version,
        "timestamp": snapshot.timestamp,
        "protocol": snapshot.protocol.to_json(),
        "metadata": {
            "id": md.id,
            "name": md.name,
            "partitionColumns": list(md.partition_columns),
            "configuration": dict(md.configuration),
            "schema": snapshot.schema,
        },
        "numFiles": snapshot.num_files,
        "sizeInBytes": snapshot.size_in_bytes,
    }
    if snapshot.num_records is not None:
        doc["numRecords"] = snapshot.num_records
    doc["files"] = [
        {
            "path": unquote(f.path),
            "partitionValues": dict(f.partition_values),
            "size": f.size,
            "numRecords": f.num_records,
            "deletionVector": _dv_summary(f),
        }
        for f in sorted(snapshot.files, key=lambda f: f.path)
    ]
    return doc


def _dv_summary(f: AddFile) -> dict[str, Any] | None:
    dv = f.deletion_vector
    return {"storageType": dv.storage_type, "cardinality": dv.cardinality} if dv is not None else None
