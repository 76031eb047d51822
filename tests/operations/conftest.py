"""Fixtures shared by the operations' tests.

The operations' tests use the Spark tables of ``tests/spark`` and the core's
readers and writers of ``tests/delta``; their fixtures are imported here so
that the folders can mirror the package's layout.
"""

from __future__ import annotations

import pytest

from tests.delta.conftest import data_file, deltalake_rows, new_table, rows_match, rows_of, snapshot_rows  # noqa: F401
from tests.spark.conftest import golden_copy, make_table  # noqa: F401


@pytest.fixture
def backend(storage_backend, monkeypatch, spark):
    """Each store in turn, its credentials in the driver's environment (the arrow workers inherit them)."""
    import sys

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend
