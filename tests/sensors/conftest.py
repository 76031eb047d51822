"""Fixtures for the sensor tests: the Airflow database (tests/airflow_env.py)."""

from __future__ import annotations

from tests.airflow_env import airflow_db  # noqa: F401  (fixture)
