"""Footer checks of the files a rewrite must touch, on a table's own files
and on a shallow clone's (absolute paths into the source, found through
``file_storage``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_delta_provider.delta.footers import files_with_extra_columns, files_with_narrower_types
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.clone.plan import clone_table


def _widened_source(root: Path, new_table: Any, data_file: Any) -> DeltaTable:
    """v0: ``id`` integer, one file with an extra column ``gone``; v1: ``id``
    widened to long (``delta.typeChanges``), one file written as long."""
    src = str(root)
    narrow = data_file(src, pa.table({"id": pa.array([1], pa.int32()), "gone": pa.array([1], pa.int32())}))
    new_table(src, pa.schema([("id", pa.int32())]), (), {"delta.enableTypeWidening": "true"}, [narrow])
    table = DeltaTable(src)
    snapshot = table.snapshot()
    schema = json.loads(snapshot.metadata.schema_string)
    schema["fields"][0]["type"] = "long"
    schema["fields"][0]["metadata"] = {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    txn = table.transaction("CHANGE COLUMN", parameters={}, snapshot=snapshot)
    txn.update_metadata(replace(snapshot.metadata, schema_string=schema_string(schema)))
    txn.add(data_file(src, pa.table({"id": pa.array([2], pa.int64())})))
    txn.commit(metrics={})
    return table


def test_footers_of_a_table_and_of_its_clone(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    source = _widened_source(tmp_path / "src", new_table, data_file)
    clone = DeltaTable(str(tmp_path / "clone"))
    clone_table(source, clone)

    for table in (source, clone):
        snapshot = table.snapshot()
        (narrow,) = files_with_narrower_types(table.storage, snapshot)
        assert narrow.num_records == 1 and narrow.path.endswith(next(f.path for f in source.snapshot(version=0).files))
        assert files_with_extra_columns(table.storage, snapshot) == {narrow.path}
