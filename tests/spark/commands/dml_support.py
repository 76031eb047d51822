"""Helpers for the UPDATE/DELETE/VACUUM tests: building tables with deltalake,
copying golden tables, reading rows back through independent readers, and
checking that a refused command left a table untouched."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

PLAIN_GOLDEN = [
    "basic-with-inserts-updates",
    "data-reader-partition-values",
    "basic-decimal-table",
    "snapshot-data3",
    "basic-with-inserts-deletes-checkpoint",
    "data-skipping-partition-and-data-column",
]


def sample_rows(n: int = 60) -> pa.Table:
    """Rows with nulls in a data column and two partition values."""
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(n)], pa.string()),
            "part": pa.array(["a" if i % 3 else "b" for i in range(n)], pa.string()),
            "val": pa.array([i * 1.5 for i in range(n)], pa.float64()),
        }
    )


def deltalake_table(path: Path, partition_by: list[str] | None = None, batches: int = 3) -> str:
    """A table written by deltalake (delta-rs) in ``batches`` appends."""
    from deltalake import write_deltalake

    data = sample_rows()
    step = data.num_rows // batches
    for i in range(batches):
        chunk = data.slice(i * step, step if i < batches - 1 else data.num_rows - i * step)
        write_deltalake(str(path), chunk, mode="append", partition_by=partition_by)
    return str(path)


#: Data columns named like names the scan uses for itself: Spark's hidden
#: ``_metadata`` column (as a string, or as a struct with a ``file_path``
#: field, which would read as a wrong path), and scan.py's ``_file`` and
#: ``__delta_file_*`` helpers. Kind -> (column names, struct columns).
SHADOWING_KINDS = {
    "metadata": (["_metadata"], False),
    "metadata-struct": (["_metadata"], True),
    "helpers": (["_file", "__delta_file_key", "__delta_file_uri"], False),
}
#: Layouts for shadowing tables: (partition_by, partitions, MAX_LITERAL_PARTITIONS
#: or None to keep it); "many-partitions" takes scan's file-join plan.
SHADOWING_LAYOUTS = {
    "unpartitioned": (None, 1, None),
    "partitioned": (["p"], 4, None),
    "many-partitions": (["p"], 4, 1),
}


def shadowing_table(path: Path, kind: str, partition_by: list[str] | None, partitions: int,
                    batches: int = 3, n: int = 60) -> str:
    """A deltalake-written table ``id, <columns of kind>, v, p`` in ``batches``
    appends. Each named column holds ``'<name>-<i % 5>'`` (some nulls), or as
    a struct, ``{file_path: '<name>-<i % 5>'}``."""
    from deltalake import write_deltalake

    columns, struct = SHADOWING_KINDS[kind]
    data: dict[str, Any] = {"id": pa.array(range(n), pa.int64())}
    for name in columns:
        values = [None if i % 11 == 0 else f"{name}-{i % 5}" for i in range(n)]
        if struct:
            data[name] = pa.array([None if x is None else {"file_path": x} for x in values],
                                  pa.struct([("file_path", pa.string())]))
        else:
            data[name] = pa.array(values, pa.string())
    data["v"] = pa.array([(i * 7) % 50 for i in range(n)], pa.int64())
    data["p"] = pa.array([i % partitions for i in range(n)], pa.int64())
    table = pa.table(data)
    step = n // batches
    for i in range(batches):
        chunk = table.slice(i * step, step if i < batches - 1 else n - i * step)
        write_deltalake(str(path), chunk, mode="append", partition_by=partition_by)
    return str(path)


#: Every (layout, kind, which) case; ``which`` is "mixed" (a data and a
#: partition column) or "on-the-column" (the shadowing column itself).
shadowing_cases = pytest.mark.parametrize(
    ("layout", "kind", "which"),
    list(itertools.product(SHADOWING_LAYOUTS, SHADOWING_KINDS, ["mixed", "on-the-column"])),
)


def shadowing_table_in_layout(path: Path, monkeypatch: Any, layout: str, kind: str) -> str:
    """:func:`shadowing_table` in ``layout``; the "many-partitions" layout
    lowers scan's literal-plan limit for the test."""
    from airflow_delta_provider.spark.read import scan as scan_module

    partition_by, partitions, limit = SHADOWING_LAYOUTS[layout]
    if limit is not None:
        monkeypatch.setattr(scan_module, "MAX_LITERAL_PARTITIONS", limit)
    return shadowing_table(path, kind, partition_by, partitions)


def shadowing_twins(tmp_path: Path, monkeypatch: Any, layout: str, kind: str) -> tuple[str, str]:
    """Two identical shadowing tables in ``layout``: ours and deltalake's."""
    return twin(shadowing_table_in_layout(tmp_path / "src", monkeypatch, layout, kind), tmp_path)


def shadowing_condition(kind: str) -> str:
    """A condition on the last shadowing column of ``kind``."""
    columns, struct = SHADOWING_KINDS[kind]
    name = columns[-1]
    return f"{name}{'.file_path' if struct else ''} = '{name}-1'"


def twin(src: str | Path, tmp_path: Path) -> tuple[str, str]:
    """Two identical copies of a table: one for us, one for deltalake."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)
    return str(ours), str(theirs)


def _key(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, (dt.datetime, dt.date, decimal.Decimal)):
        return str(v)
    if isinstance(v, dict):
        return tuple(sorted((k, _key(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_key(x) for x in v)
    return v


def _sorted(table: pa.Table) -> list[tuple]:
    names = sorted(table.column_names)
    rows = [tuple(_key(r[c]) for c in names) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def rows_deltalake(path: str) -> list[tuple]:
    from deltalake import DeltaTable

    return _sorted(DeltaTable(path).to_pyarrow_table())


def rows_rs(path: str) -> list[tuple]:
    """The table's rows as delta-rs reads them through DataFusion, which applies deletion vectors."""
    from deltalake import DeltaTable, QueryBuilder

    return _sorted(pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all()))


def rows_duckdb(con, path: str, where: str | None = None) -> list[tuple]:
    sql = f"SELECT * FROM delta_scan('{path}')" + (f" WHERE {where}" if where else "")
    return _sorted(con.execute(sql).fetch_arrow_table())


#: Golden tables delta-rs cannot read: it misparses negative decimal partition
#: values ('-2342342.23423' becomes '-2342342.-23423').
DELTALAKE_UNREADABLE = {"basic-decimal-table"}


def data_files(path: str) -> set[str]:
    """Every file under the table root outside ``_delta_log``."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != "_delta_log"]
        out.update(os.path.relpath(os.path.join(dirpath, f), path) for f in filenames)
    return out


def state(path: str) -> tuple[int, set[str], set[str]]:
    """(latest version, log files, data files): what 'untouched' compares."""
    from airflow_delta_provider.delta.table import DeltaTable

    return DeltaTable(path).latest_version(), set(os.listdir(os.path.join(path, "_delta_log"))), data_files(path)


def commit_actions(path: str, version: int | None = None) -> list[dict[str, Any]]:
    """The actions of one commit file (default: the latest), as written."""
    from airflow_delta_provider.delta.table import DeltaTable

    if version is None:
        version = DeltaTable(path).snapshot().version
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def last_commit(path: str) -> dict[str, Any]:
    from airflow_delta_provider.delta.table import DeltaTable

    return DeltaTable(path).history(limit=1)[0]
