"""Fixtures for the sensor tests.

The log builder lives in tests/triggers/delta_logs.py; it is loaded by file
path so both test packages share it whatever pytest's import mode.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "delta_logs", Path(__file__).resolve().parent.parent / "triggers" / "delta_logs.py"
)
delta_logs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(delta_logs)

BIG = 10_000


@pytest.fixture(scope="session")
def _big_log_root(tmp_path_factory):
    return delta_logs.write_log(tmp_path_factory.mktemp("big") / "table", BIG)


@pytest.fixture
def big_log(_big_log_root):
    """A 10,000-version log (``_last_checkpoint`` at 9990); versions a test adds are removed after it."""
    yield _big_log_root
    delta_logs.remove_versions_from(_big_log_root, BIG)


@pytest.fixture
def log_calls(monkeypatch):
    return delta_logs.count_log_calls(monkeypatch)
