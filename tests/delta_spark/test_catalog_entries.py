"""What delta-spark reads from the entries this provider registers: Spark SQL over
the same Hive Metastore, with delta-spark's ``DeltaCatalog``, selects a table an
APPEND-by-name registered, by its name, and sees the columns a schema change added.

A delta-spark Spark Connect server of its own: the metastore's client is set at
its start.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.catalog.binding import bind
from tests.delta_spark_oracle import DELTA_CONF
from tests.jar_cache import JarFetchError, jars
from tests.spark_connect_server import ConnectServer


def test_delta_spark_reads_a_registered_table_by_name(hive_metastore, tmp_path: Path, monkeypatch) -> None:
    try:
        delta_jars = jars("delta-spark")
    except JarFetchError as exc:
        pytest.skip(str(exc))
    for key, value in hive_metastore.env.items():
        monkeypatch.setenv(key, value)
    database = hive_metastore.namespace(tmp_path / "root")
    location = (tmp_path / "root" / "orders").as_uri()
    write_deltalake(location, pa.table({"id": [1, 2]}))
    bound = bind(f"hms://{database}.orders", write=True, create=True, location=location)
    assert bound is not None and bound.sync() == "registered"
    write_deltalake(location, pa.table({"id": [3], "note": ["x"]}), mode="append", schema_mode="merge")
    assert bind(f"hms://{database}.orders", write=True).sync() == "columns updated"

    conf = {
        **DELTA_CONF,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": hive_metastore.env["HIVE_METASTORE_URI"],
        "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
    }
    server = ConnectServer(tmp_path, conf=conf, jars=delta_jars, memory="2g")
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        session = ConnectSession.builder.remote(server.url).create()
        rows = session.sql(f"SELECT id, note FROM {database}.orders ORDER BY id").collect()
        assert [tuple(r) for r in rows] == [(1, None), (2, None), (3, "x")]
        detail = session.sql(f"DESCRIBE DETAIL {database}.orders").collect()[0]
        assert detail["format"] == "delta" and detail["location"].rstrip("/").endswith("/orders")
        session.stop()
    finally:
        server.stop()
