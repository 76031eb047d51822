"""Run an operation through the Spark CLI's entry point, on a shared session.

New tests drive operations with the command line's words (``["update", TABLE,
"--condition", ..., "--set", "col=expr"]``), the interface that stays stable
while the commands move; this module is the one place that knows how.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa


def run_cli(spark: Any, operation: str, table: str, *options: str) -> dict[str, Any]:
    """Run ``operation`` on ``table`` with the CLI's ``options``, its pre-flight
    check first, as the CLI runs it; the result (``{"table", "operation",
    "version", "metrics", ...}``) as a dict."""
    from airflow_delta_provider.operations.runners.preflight import preflight
    from airflow_delta_provider.spark.cli import execute, parse_request

    request = parse_request([operation, table, *options])
    preflight(request)
    result = execute(request, spark)
    return json.loads(result.to_json())


def sorted_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The rows of ``table`` (its ``columns``, default all) as tuples, sorted (None-safe)."""
    names = columns or table.column_names
    return sorted((tuple(row[n] for n in names) for row in table.to_pylist()), key=repr)


def delta_rs_rows(path: str, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The table's rows as delta-rs reads them (its DataFusion scan, which
    honours column mapping; ``to_pyarrow_table`` of deltalake 1.6 reads a
    mapped column of a Databricks table as null), sorted."""
    from deltalake import DeltaTable, QueryBuilder

    return sorted_rows(
        pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all()), columns
    )


def duckdb_rows(con: Any, path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The table's ``columns`` as DuckDB's delta extension reads them, sorted."""
    names = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    escaped = path.replace("'", "''")
    return sorted((tuple(r) for r in con.execute(f"SELECT {names} FROM delta_scan('{escaped}')").fetchall()), key=repr)
