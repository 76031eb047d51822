"""A table written by delta-rs and by the core (with operation tokens): a known timeline."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.actions.model import RemoveFile
from airflow_delta_provider.delta.table import DeltaTable

TOKEN = "etl/update_orders/manual__2024-05-01T00:00:00+00:00/-1"


@pytest.fixture
def mixed_table(tmp_path: Path, data_file) -> Path:
    """0: delta-rs WRITE (3 rows); 1: delta-rs append with a new column (2 rows);
    2: the core's UPDATE of version 0's file, with a token and delta-spark's metrics."""
    root = tmp_path / "orders"
    write_deltalake(str(root), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    write_deltalake(
        str(root),
        pa.table({"id": pa.array([4, 5], pa.int64()), "status": ["new", "new"]}),
        mode="append",
        schema_mode="merge",
    )
    table = DeltaTable(root)
    snapshot = table.snapshot()
    first = next(f for f in snapshot.files if f.num_records == 3)
    txn = table.transaction("UPDATE", {"predicate": "id = 1"}, snapshot=snapshot)
    txn.add(RemoveFile(path=first.path, deletion_timestamp=1, size=first.size, partition_values={}))
    txn.add(data_file(root, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "status": ["x", None, None]})))
    txn.commit({"numUpdatedRows": 1, "numCopiedRows": 2, "numAddedBytes": 1234, "executionTimeMs": 1500}, token=TOKEN)
    return root
