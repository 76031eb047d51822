"""Fixtures of the delta-spark tests: the seeds of the interop matrix, built once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.delta_spark.matrix import Seeds


@pytest.fixture(scope="session")
def seeds(delta_spark, tmp_path_factory) -> Seeds:
    """The seeds; with ``MATRIX_SEEDS`` set, kept in that folder and reused by later runs (local iteration)."""
    kept = os.environ.get("MATRIX_SEEDS")
    return Seeds(delta_spark, Path(kept) if kept else tmp_path_factory.mktemp("seeds"))
