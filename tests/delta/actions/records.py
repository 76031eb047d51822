"""One fully populated instance of every log record, shared by the definition tests."""

from __future__ import annotations

from airflow_delta_provider.delta.actions.fields import LogRecord
from airflow_delta_provider.delta.actions.model import (
    AddCDCFile,
    AddFile,
    DeletionVector,
    DomainMetadata,
    Format,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.log.sidecars import SidecarFile

DV = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 3, offset=1, max_row_index=9)

#: Every field set (no ``None``), so a field the codecs drop shows up.
FULL: list[LogRecord] = [
    DV,
    Format("parquet", {"k": "v"}),
    Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "appendOnly")),
    Metadata(
        "id-1",
        '{"type":"struct","fields":[]}',
        ("p",),
        {"delta.appendOnly": "true"},
        format=Format("parquet", {"k": "v"}),
        name="t",
        description="a table",
        created_time=1697587762295,
    ),
    AddFile(
        path="p=a/f.parquet",
        partition_values={"p": "a"},
        size=912,
        modification_time=1697587762000,
        data_change=False,
        stats='{"numRecords":50}',
        tags={"INSERTION_TIME": "1"},
        deletion_vector=DV,
        base_row_id=4,
        default_row_commit_version=2,
        clustering_provider="liquid",
    ),
    RemoveFile(
        path="f.parquet",
        deletion_timestamp=1697587762273,
        data_change=False,
        extended_file_metadata=True,
        partition_values={"p": "a"},
        size=912,
        stats='{"numRecords":50}',
        tags={"k": "v"},
        deletion_vector=DV,
        base_row_id=4,
        default_row_commit_version=2,
    ),
    AddCDCFile("_change_data/c.parquet", {"p": "a"}, 10, data_change=False, tags={"k": "v"}),
    Txn("app", 3, 1697587762000),
    DomainMetadata("delta.clustering", '{"clusteringColumns":[]}', removed=True),
    SidecarFile("s.parquet", 100, 1697587762000, {"k": "v"}),
]

#: Fields of a record class that are deliberately not in the log.
NOT_IN_LOG = {(AddFile, "stats_parsed")}
