"""Fixtures of the delta-spark tests: the seeds of the interop matrix, built once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.delta_spark.matrix import Seeds


@pytest.fixture(scope="session", autouse=True)
def _classic_session_before_spark_connect(request):
    """Start our classic SparkSession before any Spark Connect client of the
    oracle: PySpark forks the JVM's launcher with a ``preexec_fn``, and a fork
    taken while gRPC's threads run can kill the child before it starts (seen
    once in CI: "Java gateway process exited before sending its port number",
    beside a gRPC ``epoll_wait error: Bad file descriptor``)."""
    if any("spark" in item.fixturenames for item in request.session.items):
        request.getfixturevalue("spark")


@pytest.fixture(scope="session")
def seeds(delta_spark, tmp_path_factory) -> Seeds:
    """The seeds; with ``MATRIX_SEEDS`` set, kept in that folder and reused by later runs (local iteration)."""
    kept = os.environ.get("MATRIX_SEEDS")
    return Seeds(delta_spark, Path(kept) if kept else tmp_path_factory.mktemp("seeds"))


def pytest_collection_modifyitems(config, items):
    """The matrix's cells carry the ``matrix`` mark, so that ``make matrix`` runs them alone."""
    for item in items:
        if item.path.name.startswith("test_matrix_") and item.path.name != "test_matrix_page.py":
            item.add_marker(pytest.mark.matrix)
