"""Delta logs for the trigger tests (shared with tests/sensors through delta_logs.py)."""

from __future__ import annotations

import pytest

import tests.airflow_env  # noqa: F401  (sets AIRFLOW_HOME before airflow loads)

from .delta_logs import count_log_calls, remove_versions_from, write_log

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
