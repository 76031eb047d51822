"""Tables with the change data feed on, and their changes as we and delta-rs read them.

Shared by the tests of the commands that write change data
(``tests/operations/dml/test_change_data.py``), of reading table changes
(``tests/spark/read/test_table_changes.py``) and of CHANGES
(``tests/operations/changes/test_spark.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.spark.read.table_changes import read_changes
from tests.operations.runs import run_append

CDF = {"delta.enableChangeDataFeed": "true"}
DV = {"delta.enableDeletionVectors": "true"}


def source(tmp_path: Path, name: str, rows: list[tuple[int, str, int]]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    ids, parts, amounts = zip(*rows) if rows else ((), (), ())
    data = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(parts, pa.string()),
            "amount": pa.array(amounts, pa.int64()),
        }
    )
    pq.write_table(data, folder / "a.parquet")
    return str(folder)


def cdf_table(spark, tmp_path: Path, properties: dict | None = None, partition_by=None) -> str:
    path = str(tmp_path / "t")
    seed = source(tmp_path, "seed", [(i, "a" if i % 2 else "b", i * 10) for i in range(1, 11)])
    run_append(
        spark, path, seed, format="parquet", partition_by=partition_by, table_properties={**CDF, **(properties or {})}
    )
    return path


def ours(spark, path: str, start: int, end: int | None = None) -> list[tuple]:
    frame = read_changes(spark, path, start, end).frame
    rows = frame.select("id", "part", "amount", "_change_type", "_commit_version").collect()
    return sorted((tuple(r) for r in rows), key=repr)


def theirs(path: str, start: int, end: int | None = None) -> list[tuple]:
    from deltalake import DeltaTable as RsTable

    table = rs_changes(RsTable(path), start, end)
    rows = table.select(["id", "part", "amount", "_change_type", "_commit_version"]).to_pylist()
    return sorted((tuple(r.values()) for r in rows), key=repr)


def rs_changes(table, start: int, end: int | None = None) -> pa.Table:
    """delta-rs's change data feed as a pyarrow table."""
    return pa.RecordBatchReader.from_stream(table.load_cdf(starting_version=start, ending_version=end)).read_all()


def cdc_actions(path: str, version: int) -> list[dict]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line)["cdc"] for line in text.splitlines() if '"cdc"' in line]
