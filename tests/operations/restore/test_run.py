"""RESTORE on tables the Spark engine wrote: deletion vectors and an evolved
schema are undone, as delta-rs (through DataFusion) and DuckDB read them, and
the restored table takes new writes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import DataFilesMissingError, InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.cli import build_parser
from tests.operations.dml.dml_support import _sorted, rows_duckdb, rows_rs
from tests.operations.runs import run_append, run_delete, run_restore


def _rows_at(path: str, version: int) -> list[tuple]:
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(path, version=version)
    return _sorted(pa.table(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all()))


def test_restore_undoes_vector_deletes_and_schema_evolution(spark, tmp_path, duckdb_delta):
    source = tmp_path / "src"
    source.mkdir()
    for i in range(3):
        ids = list(range(i * 40, (i + 1) * 40))
        pq.write_table(
            pa.table({"id": pa.array(ids, pa.int64()), "val": [f"v{x}" for x in ids]}), source / f"{i}.parquet"
        )
    wider = tmp_path / "wider.parquet"
    pq.write_table(pa.table({"id": pa.array([500], pa.int64()), "val": ["w"], "note": ["new"]}), wider)
    table = str(tmp_path / "t")
    run_append(spark, table, str(source), "parquet", table_properties={"delta.enableDeletionVectors": "true"})
    files = DeltaTable(table).snapshot().num_files
    deleted = run_delete(spark, table, "id % 10 = 0")
    assert deleted.metrics["numDeletionVectorsAdded"] == files  # every file holds such rows
    run_append(spark, table, str(wider), "parquet", merge_schema=True)
    expected = _rows_at(table, 0)

    result = run_restore(None, table, version=0, token="restore")

    assert result.version == 3
    assert result.metrics["numRestoredFiles"] == files  # the files again, without their vectors
    assert result.metrics["numRemovedFiles"] == files + 1  # the files with vectors, and the appended one
    assert rows_rs(table) == expected
    assert rows_duckdb(duckdb_delta, table) == expected
    # The restored table takes writes: a new vector on a restored file.
    again = run_delete(spark, table, "id = 1")
    assert again.metrics["numDeletedRows"] == 1 and again.metrics["numDeletionVectorsAdded"] == 1
    assert len(rows_rs(table)) == len(expected) - 1


def test_the_cli_takes_a_version_or_a_timestamp() -> None:
    parser = build_parser()
    assert parser.parse_args(["restore", "/t", "--version", "3"]).version == 3
    assert parser.parse_args(["restore", "/t", "--timestamp", "2026-01-01T00:00:00Z"]).timestamp.startswith("2026")
    with pytest.raises(InvalidInputError, match="not allowed with argument"):
        parser.parse_args(["restore", "/t", "--version", "3", "--timestamp", "2026-01-01"])
    with pytest.raises(InvalidInputError, match="one of the arguments --version --timestamp is required"):
        parser.parse_args(["restore", "/t"])


def test_a_vacuumed_deletion_vector_file_is_named_and_nothing_is_committed(spark, tmp_path):
    source = tmp_path / "src.parquet"
    pq.write_table(pa.table({"id": pa.array(range(50), pa.int64())}), source)
    table = str(tmp_path / "t")
    run_append(spark, table, str(source), "parquet", table_properties={"delta.enableDeletionVectors": "true"})
    run_delete(spark, table, "id = 1")  # v1: a vector file
    first_vectors = {p.name for p in Path(table).glob("deletion_vector_*.bin")}
    run_delete(spark, table, "id = 2")  # v2: the union, in a new file
    (gone,) = first_vectors
    (Path(table) / gone).unlink()  # what VACUUM does once v1 is past the retention

    with pytest.raises(DataFilesMissingError, match=gone):
        run_restore(None, table, version=1)
    assert DeltaTable(table).latest_version() == 2
