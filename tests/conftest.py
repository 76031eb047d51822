"""Fixtures shared across the whole suite.

One SparkSession serves every test that asks for ``spark``: Spark takes
seconds to start, and the tests run on two cores.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A throwaway AIRFLOW_HOME, set before anything imports airflow.
pytest_plugins = [
    "tests.airflow_env",
    "tests.storage_servers",
    "tests.spark_connect_server",
    "tests.delta_spark_oracle",
    "tests.unity_catalog_server",
    "tests.catalogs",
]


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """The delta-spark golden tables: ``DELTA_GOLDEN_DIR`` when set, else the
    copy vendored in ``tests/golden`` (Apache-2.0, from delta-io/delta)."""
    configured = os.environ.get("DELTA_GOLDEN_DIR")
    path = Path(configured) if configured else ROOT / "tests" / "golden"
    if not path.is_dir():
        pytest.skip(f"golden tables not found at {path} (DELTA_GOLDEN_DIR)")
    return path


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession of the test session."""
    pytest.importorskip("pyspark")
    from airflow_delta_provider.spark.runtime.session import get_or_create_session
    from tests.spark_connect_server import SHORT_LIVED_JVM_OPTIONS

    short_lived = os.environ.pop(SHORT_LIVED_JVM_OPTIONS, None)  # the gateway JVM lives the whole session
    try:
        session = get_or_create_session(
            master="local[2]",
            conf={
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.driver.memory": "2g",
            },
        )
    finally:
        if short_lived is not None:
            os.environ[SHORT_LIVED_JVM_OPTIONS] = short_lived
    yield session
    session.stop()
    # py4j logs "Closing down clientserver connection" (INFO) from each
    # connection's __del__, which runs at interpreter exit. By then pytest has
    # closed the captured stream that Airflow's logging setup (imported by the
    # Airflow tests) bound a root INFO handler to: "--- Logging error ---".
    # Spark is done here, so py4j has nothing left worth an INFO line.
    import logging

    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def duckdb_delta():
    """A DuckDB connection with the delta extension loaded from its wheel."""
    import duckdb
    import duckdb_extension_delta

    ext_dir = Path(duckdb_extension_delta.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    con = duckdb.connect()
    con.execute(f"LOAD '{ext_dir / 'delta.duckdb_extension'}'")
    yield con
    con.close()


BIG_LOG_VERSIONS = 10_000


@pytest.fixture(scope="session")
def _big_log_root(tmp_path_factory):
    from tests.delta_logs import write_log

    return write_log(tmp_path_factory.mktemp("big") / "table", BIG_LOG_VERSIONS)


@pytest.fixture
def big_log(_big_log_root):
    """A 10,000-version log (``_last_checkpoint`` at 9990), for sensors and triggers;
    versions a test adds are removed after it."""
    from tests.delta_logs import remove_versions_from

    yield _big_log_root
    remove_versions_from(_big_log_root, BIG_LOG_VERSIONS)


@pytest.fixture
def log_calls(monkeypatch):
    """Counts the log-store calls a probe makes."""
    from tests.delta_logs import count_log_calls

    return count_log_calls(monkeypatch)
