"""Fixtures for the Spark engine tests: tables made by ``deltalake`` and
copies of the golden tables, plus helpers to compare table states."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest


@pytest.fixture
def make_table(tmp_path: Path) -> Callable[..., str]:
    """Write a table with ``deltalake`` and return its path."""
    from deltalake import write_deltalake

    def make(data: pa.Table, name: str = "table", **kwargs: Any) -> str:
        path = str(tmp_path / name)
        write_deltalake(path, data, **kwargs)
        return path

    return make


@pytest.fixture
def golden_copy(golden_dir: Path, tmp_path: Path) -> Callable[[str], str]:
    """Copy a golden table into tmp_path (never change the shared originals)."""

    def copy(name: str) -> str:
        dest = tmp_path / "golden" / name
        shutil.copytree(golden_dir / name, dest)
        return str(dest)

    return copy


def disk_files(root: str) -> set[str]:
    """Every file under ``root`` (relative paths), ``_delta_log`` included."""
    out = set()
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def table_rows(path: str, columns: list[str] | None = None) -> list[tuple]:
    """The table's rows as read by deltalake, sorted (None-safe)."""
    from deltalake import DeltaTable

    t = DeltaTable(path).to_pyarrow_table(columns=columns)
    rows = [tuple(r.values()) for r in t.to_pylist()]
    return sorted(rows, key=repr)


def spark_rows(df, columns: list[str] | None = None) -> list[tuple]:
    cols = columns or df.columns
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)
