"""REORG ... APPLY (PURGE) on files that hold columns the table no longer names.

The files with deletion vectors are covered in test_deletion_vectors.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from airflow_delta_provider.delta.partitions import decode_path
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.cli import execute, parse_request


def _footer_columns(table: str) -> list[set[str]]:
    return [set(pq.read_schema(Path(table) / decode_path(f.path)).names) for f in DeltaTable(table).snapshot().files]


def test_purge_rewrites_the_files_that_hold_a_dropped_column(spark, tmp_path):
    source = str(tmp_path / "source")
    spark.range(30).selectExpr("id", "CAST(id AS STRING) AS secret", "id % 3 AS v").coalesce(2).write.parquet(source)
    table = str(tmp_path / "t")
    execute(
        parse_request(
            ["append", table, "--source", source, "--format", "parquet", "--property", "delta.columnMapping.mode=name"]
        ),
        spark,
    )
    execute(parse_request(["alter", table, "--change", json.dumps({"drop_columns": ["secret"]})]), spark)
    dropped = DeltaTable(table).snapshot()
    assert all(len(names) == 3 for names in _footer_columns(table))  # the data is still in the files

    result = execute(parse_request(["reorg", table, "--purge"]), spark)
    assert result.version == dropped.version + 1
    assert result.metrics["numRemovedFiles"] == len(dropped.files) and result.metrics["numDeletionVectorsRemoved"] == 0
    assert all(len(names) == 2 for names in _footer_columns(table))  # gone from every file
    rows = spark.read.parquet(*(str(Path(table) / decode_path(f.path)) for f in DeltaTable(table).snapshot().files))
    assert rows.count() == 30
    assert execute(parse_request(["reorg", table, "--purge"]), spark).version is None  # nothing left to purge
