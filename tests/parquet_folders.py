"""A small Hive-partitioned Parquet folder (``day=.../region=...``), and the rows
delta-rs reads back once it is converted: shared by the CONVERT tests."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DATA = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "amount": pa.array([10, 20, 30, 40], pa.int64())})
#: folder -> the rows of its one file
FILES = {"day=2026-01-01/region=eu": DATA.slice(0, 2), "day=2026-01-02/region=us": DATA.slice(2, 2)}
#: The converted table's rows, by id.
EXPECTED = [
    {"id": 1, "amount": 10, "day": dt.date(2026, 1, 1), "region": "eu"},
    {"id": 2, "amount": 20, "day": dt.date(2026, 1, 1), "region": "eu"},
    {"id": 3, "amount": 30, "day": dt.date(2026, 1, 2), "region": "us"},
    {"id": 4, "amount": 40, "day": dt.date(2026, 1, 2), "region": "us"},
]


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_folder(root: Path) -> None:
    """:data:`FILES` under ``root``, one ``part-0.parquet`` per folder."""
    for folder, rows in FILES.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "part-0.parquet").write_bytes(parquet_bytes(rows))


def rows_by_delta_rs(uri: str, storage_options: dict[str, str] | None = None) -> list[dict]:
    from deltalake import DeltaTable as RsTable

    rows = RsTable(uri, storage_options=storage_options).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r["id"])
