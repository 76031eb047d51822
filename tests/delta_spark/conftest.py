"""Fixtures of the delta-spark tests: the seeds of the interop matrix, built once per session."""

from __future__ import annotations

import pytest

from tests.delta_spark.matrix import Seeds


@pytest.fixture(scope="session")
def seeds(delta_spark, tmp_path_factory) -> Seeds:
    return Seeds(delta_spark, tmp_path_factory.mktemp("seeds"))
