"""Domain metadata and liquid clustering (``domainMetadata``, ``clustering``):
tables that carry domains take our commits and keep their domains, through
checkpoints too; a clustering column cannot be dropped."""

from __future__ import annotations

import json
import time

import pytest

from airflow_delta_provider.delta.actions.model import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    serialize_commit,
)
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.clustering import clustering_columns
from airflow_delta_provider.operations.alter.plan import DropColumns, alter_table

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "day", "type": "date", "nullable": True, "metadata": {}},
            {"name": "note", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
CLUSTERED = Protocol(1, 7, writer_features=("appendOnly", "clustering", "domainMetadata", "invariants"))


def clustered_table(root) -> DeltaTable:
    """A table clustered by ``day`` (as delta-spark's CREATE ... CLUSTER BY writes it), plus a domain of a user's."""
    table = DeltaTable(root)
    now = int(time.time() * 1000)
    actions = [
        CommitInfo({"timestamp": now, "operation": "CREATE TABLE", "isBlindAppend": True}),
        CLUSTERED,
        Metadata.new(SCHEMA, (), {}, created_time=now),
        DomainMetadata("delta.clustering", json.dumps({"clusteringColumns": [["day"]]})),
        DomainMetadata("acme.lineage", '{"owner": "etl"}'),
        AddFile("f0.parquet", {}, 1, 1),
    ]
    assert table.log_store.put_if_absent(0, serialize_commit(actions))  # as delta-spark writes it
    return table


def append(table: DeltaTable, name: str) -> int:
    txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    txn.add(AddFile(name, {}, 1, 1))
    return txn.commit().version


def test_writes_keep_every_domain_through_a_checkpoint(tmp_path):
    table = clustered_table(tmp_path)
    append(table, "f1.parquet")
    write_checkpoint(table, table.snapshot())
    append(table, "f2.parquet")
    snap = DeltaTable(str(tmp_path)).snapshot()
    assert set(snap.domain_metadata) == {"delta.clustering", "acme.lineage"}
    assert clustering_columns(snap) == [("day",)]
    from deltalake import DeltaTable as RsTable

    assert RsTable(str(tmp_path)).version() == snap.version == 2


def test_a_clustering_column_cannot_be_dropped(tmp_path):
    table = clustered_table(tmp_path)
    before = table.latest_version()
    with pytest.raises(InvalidInputError, match="clustered by it"):
        alter_table(table, DropColumns(("day",)), enable_column_mapping=True)
    assert table.latest_version() == before
    alter_table(table, DropColumns(("note",)), enable_column_mapping=True)  # another column goes
    assert clustering_columns(table.snapshot()) == [("day",)]
