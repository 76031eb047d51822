"""A hand-built table whose health is known: small files, deletion vectors, tombstones, history."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap64

from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector
from airflow_delta_provider.delta.actions.model import RemoveFile
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
DAY_MS = 24 * 3600 * 1000
#: Rows the deletion vectors hide, and in how many files.
HIDDEN_ROWS = 3 + 4


def build_table(root: Path, data_file: Any, new_table: Any) -> dict[str, Any]:
    """Versions: 0 create (day=a: 6 files of 10 rows, day=b: 3, day=null: 1),
    1 OPTIMIZE (removes b's first file), 2 DELETE (vectors on two of a's
    files), checkpoint at 2, 3 VACUUM END, 4 DELETE (removes b's second file,
    8 days ago by its deletionTimestamp: past the retention; a checkpoint
    would drop it). Returns what was written."""
    now = int(time.time() * 1000)
    a = [data_file(root, pa.table({"id": list(range(10 * i, 10 * i + 10))}), {"day": "a"}) for i in range(6)]
    b = [data_file(root, pa.table({"id": list(range(100 + 20 * i, 120 + 20 * i))}), {"day": "b"}) for i in range(3)]
    n = [data_file(root, pa.table({"id": [500, 501]}), {"day": None})]
    new_table(root, SCHEMA, ["day"], {"delta.enableDeletionVectors": "true"}, [*a, *b, *n])
    table = DeltaTable(root)
    first = RemoveFile(path=b[0].path, deletion_timestamp=now, size=b[0].size, partition_values={"day": "b"})
    _commit(table, "OPTIMIZE", [first])
    with_dvs = []
    for f, rows in ((a[0], [0, 1, 2]), (a[1], [5, 6, 7, 8])):
        removed = RemoveFile(path=f.path, deletion_timestamp=now, size=f.size, partition_values={"day": "a"})
        with_dvs += [removed, dataclasses.replace(f, deletion_vector=inline_vector(BitMap64(rows)))]
    _commit(table, "DELETE", with_dvs)
    write_checkpoint(table, table.snapshot())
    _commit(table, "VACUUM END", [])
    old = RemoveFile(path=b[1].path, deletion_timestamp=now - 8 * DAY_MS, size=b[1].size, partition_values={"day": "b"})
    _commit(table, "DELETE", [old])
    return {
        "a": a,
        "b": b,
        "null": n,
        "vacuumable": b[1].size,
        "tombstoned": b[0].size + b[1].size + a[0].size + a[1].size,
    }


def _commit(table: DeltaTable, operation: str, actions: list[Any]) -> None:
    txn = table.transaction(operation, snapshot=table.snapshot())
    txn.add_all(actions)
    txn.commit()


@pytest.fixture
def health_table(tmp_path, data_file, new_table) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "t"
    root.mkdir()
    return root, build_table(root, data_file, new_table)
