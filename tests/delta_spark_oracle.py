"""delta-spark, the reference implementation, as an oracle the tests talk to.

It runs apart from us: a Spark Connect server of its own (pip pyspark's
server, in its own JVM and process group, on a loopback port), started once per
test session with delta-spark's jars (:mod:`tests.jar_cache`) and its session
extension and catalog. Tests speak SQL to it through a Connect client
(:attr:`DeltaSpark.session`), so no Delta class ever loads in our own
SparkSession or in our spark-submit applications.

``delta_spark`` is the session fixture. Where tests run in parallel
(pytest-xdist), each worker starts its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jar_cache import DELTA_VERSION, JarFetchError, jars
from tests.spark_connect_server import ConnectServer

#: What turns a Spark session into a delta-spark one (Delta's quick start).
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # The tests VACUUM with short retention on purpose.
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    # Log replay runs in this many tasks (default 50): the tests' tables are
    # small, and 50 tasks on two cores cost seconds per snapshot.
    "spark.databricks.delta.snapshotPartitions": "2",
    # VACUUM lists the table in a job of this many tasks (default 10,000: 20-30 s
    # for a tiny table on two cores). Delta's own Python tests set 5.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
    # Keep the state of a few tables only (default 10,000): the matrix touches
    # hundreds, and their cached snapshots would fill the heap. Delta's own
    # Python tests set the same (python/delta/testing/utils.py).
    "spark.databricks.delta.delta.log.cacheSize": "8",
    "spark.driver.extraJavaOptions": "-Ddelta.log.cacheSize=8",
    # Interpreted rather than generated code: the tests' tables are tiny, and compiling
    # each query's code cost more CPU than running it (about 17% of a matrix cell).
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


class DeltaSpark:
    """A running delta-spark: its server and a Connect client session."""

    version = DELTA_VERSION

    def __init__(self, workdir: Path) -> None:
        try:
            delta_jars = jars("delta-spark")
        except JarFetchError as exc:
            pytest.fail(str(exc), pytrace=False)
        warehouse = workdir / "warehouse"
        self.server = ConnectServer(
            workdir,
            conf={**DELTA_CONF, "spark.sql.warehouse.dir": str(warehouse)},
            jars=delta_jars,
            memory="3g",
        )
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        self.session: Any = ConnectSession.builder.remote(self.server.url).create()

    def sql(self, statement: str) -> list[Any]:
        """Run ``statement`` and return its rows."""
        return self.session.sql(statement).collect()

    def table(self, path: str) -> str:
        """The SQL name of the Delta table at ``path``."""
        return f"delta.`{path}`"

    def rows(self, path: str, order_by: str | None = None, columns: str = "*") -> list[tuple]:
        order = f" ORDER BY {order_by}" if order_by else ""
        return [tuple(r) for r in self.sql(f"SELECT {columns} FROM {self.table(path)}{order}")]

    def history(self, path: str, limit: int | None = None) -> list[dict[str, Any]]:
        """``DESCRIBE HISTORY`` (its last ``limit`` commits), oldest first, each row as a dict."""
        rows = self.sql(f"DESCRIBE HISTORY {self.table(path)}" + (f" LIMIT {limit}" if limit else ""))
        return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["version"])

    def detail(self, path: str) -> dict[str, Any]:
        """``DESCRIBE DETAIL`` as a dict."""
        return self.sql(f"DESCRIBE DETAIL {self.table(path)}")[0].asDict(recursive=True)

    def stop(self) -> None:
        try:
            self.session.stop()
        finally:
            self.server.stop()


@pytest.fixture(scope="session")
def delta_spark(tmp_path_factory) -> Iterator[DeltaSpark]:
    """The test session's delta-spark (started on first use)."""
    oracle = DeltaSpark(tmp_path_factory.mktemp("delta-spark"))
    yield oracle
    oracle.stop()
