"""Fixtures for the sensor tests: Delta logs (built by tests/triggers/delta_logs.py) and Airflow."""

from __future__ import annotations

import pytest

import tests.airflow_env  # noqa: F401  (sets AIRFLOW_HOME before airflow loads)
from tests.airflow_env import airflow_db  # noqa: F401  (fixture)

from ..triggers.delta_logs import count_log_calls, remove_versions_from, write_log

BIG = 10_000


@pytest.fixture(scope="session")
def _big_log_root(tmp_path_factory):
    return write_log(tmp_path_factory.mktemp("big") / "table", BIG)


@pytest.fixture
def big_log(_big_log_root):
    """A 10,000-version log (``_last_checkpoint`` at 9990); versions a test adds are removed after it."""
    yield _big_log_root
    remove_versions_from(_big_log_root, BIG)


@pytest.fixture
def log_calls(monkeypatch):
    return count_log_calls(monkeypatch)
