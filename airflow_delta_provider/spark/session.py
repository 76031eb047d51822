"""The SparkSession the engine runs on, with the settings Delta files need.

Some settings are required for the files we write to be what Delta readers
expect (INT64 microsecond timestamps, snappy, UTC partition values); those are
always set. Others are only defaults (the UI off), applied when neither the
caller nor spark-submit chose a value.
"""

from __future__ import annotations

from typing import Mapping

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

#: Settings the engine relies on; always applied.
REQUIRED_CONF: dict[str, str] = {
    # Delta readers expect INT64 timestamps (Spark's default INT96 is legacy).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Partition values and stats timestamps are written in UTC.
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.compression.codec": "snappy",
    # Proleptic Gregorian dates and timestamps, as delta-rs and DuckDB read them.
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    # Files we did not write (golden tables, old writers) are read as written.
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    # Staging folders are removed whole; no _SUCCESS markers are needed.
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
}

#: Settings applied only when nobody configured them.
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def get_or_create_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "airflow-delta-provider",
) -> SparkSession:
    """Return the active SparkSession, or start one configured for Delta writes.

    ``master`` is left to spark-submit (or pyspark's ``local[*]``) when None.
    ``conf`` entries win over :data:`DEFAULT_CONF`; :data:`REQUIRED_CONF` wins
    over both, because the files would not be valid Delta data otherwise.
    """
    conf = dict(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    submitted = _submitted_conf()
    for key, value in DEFAULT_CONF.items():
        if key not in conf and not submitted.contains(key):
            builder = builder.config(key, value)
    for key, value in conf.items():
        builder = builder.config(key, value)
    for key, value in REQUIRED_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    # getOrCreate may return a session started elsewhere: the SQL settings are
    # runtime settings, so make sure they hold there too.
    for key, value in REQUIRED_CONF.items():
        if not key.startswith("spark.hadoop."):
            session.conf.set(key, value)
    return session


def _submitted_conf() -> SparkConf:
    """The configuration spark-submit handed the driver (empty otherwise).

    Under spark-submit the JVM already runs and holds ``--conf`` values as
    system properties; a plain ``python`` run has no JVM yet, and starting
    one here would fix its options before ours are known.
    """
    if SparkContext._gateway is None and not _under_spark_submit():
        return SparkConf(loadDefaults=False)
    SparkContext._ensure_initialized()
    return SparkConf()


def _under_spark_submit() -> bool:
    import os

    return "PYSPARK_GATEWAY_PORT" in os.environ
