"""Fixtures shared by the command tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def backend(storage_backend, monkeypatch, spark):
    """Each store in turn, its credentials in the driver's environment (the arrow workers inherit them)."""
    import sys

    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    return storage_backend
