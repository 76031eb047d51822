"""One version in detail: commitInfo, files added and removed, schema change, the table as of it."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from airflow_delta_provider.delta.errors import VersionNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.timeline.detail import schema_change, version_detail
from tests.delta.timeline.conftest import TOKEN


def test_a_version_lists_its_files_and_the_table_as_of_it(mixed_table):
    table = DeltaTable(mixed_table)
    doc = version_detail(table, 2)
    assert doc["commitInfo"]["operation"] == "UPDATE" and doc["commitInfo"]["tags"]["airflow.operationToken"] == TOKEN
    assert (doc["numAdded"], doc["numRemoved"]) == (1, 1)
    assert doc["added"][0]["numRecords"] == 3 and doc["removed"][0]["dataChange"] is True
    assert doc["schemaChange"] is None
    for version in (0, 1, 2):  # DESCRIBE at each version: what delta-rs sees there
        described = version_detail(table, version)["describe"]
        rs = RsTable(str(mixed_table), version=version)
        assert described["version"] == version
        assert described["numFiles"] == len(rs.file_uris())
        assert described["sizeInBytes"] == sum(pa.table(rs.get_add_actions())["size_bytes"].to_pylist())


def test_the_schema_change_of_a_version(mixed_table):
    table = DeltaTable(mixed_table)
    assert version_detail(table, 1)["schemaChange"] == {"added": ["status"], "dropped": [], "changed": []}
    assert version_detail(table, 0)["schemaChange"] == {"added": ["id"], "dropped": [], "changed": []}
    before = {"fields": [{"name": "a", "type": "integer", "nullable": True}]}
    after = {"fields": [{"name": "a", "type": "long", "nullable": False}]}
    assert schema_change(before, after) == {
        "added": [],
        "dropped": [],
        "changed": [{"name": "a", "before": "integer", "after": "long not null"}],
    }


def test_the_file_lists_are_bounded(mixed_table):
    doc = version_detail(DeltaTable(mixed_table), 2, max_files=0)
    assert (doc["numAdded"], doc["added"], doc["numRemoved"], doc["removed"]) == (1, [], 1, [])


def test_a_missing_version_is_named(mixed_table):
    with pytest.raises(VersionNotFoundError, match="version 9"):
        version_detail(DeltaTable(mixed_table), 9)
