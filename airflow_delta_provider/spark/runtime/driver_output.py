"""What a driver of the Spark CLI prints: Spark's log kept quiet, and the
application's errors on the stream that is not the result's.

Spark's log
-----------
A command shows Spark's warnings and errors and its own lines (progress,
the result, a one-line error); Spark's INFO records only with ``--debug``.
Quiet means the log4j 2 configuration :data:`QUIET_LOG4J2` (Spark's own
``log4j2-defaults.properties`` at WARN, on stderr, in Spark's layout), or
Spark's ``spark.log.level`` setting, depending on who launches the driver JVM
(:func:`spark_log_conf`):

- **This process launches it** (``python -m airflow_delta_provider.spark``,
  the ``delta-spark-app`` command): ``-Dlog4j2.configurationFile`` in
  ``spark.driver.extraJavaOptions``, read when the JVM starts, so not one
  INFO line is printed. The configuration is written once to a file in the
  temporary folder.
- **spark-submit launched it** and runs this process: the JVM and its
  logging are set up before any Python runs, and the SparkContext resets a
  configuration loaded into it afterwards to Spark's defaults (checked with
  Spark 4.2), so ``spark.log.level=WARN`` is set, which the SparkContext applies
  as it starts: only its first three INFO lines (Spark, OS and Java
  versions) and Spark's ``Setting Spark log level`` line come before it.

Settings of the user's own (a ``log4j2.configurationFile`` in the driver's
options, a ``spark.log.level``) are left alone. ``--debug`` asks for INFO
(``spark.log.level=INFO``; a JVM PySpark launches would start at WARN).

stderr under spark-submit
-------------------------
spark-submit starts the Python driver with its stderr merged into its
stdout (``PythonRunner``), so the application's one-line errors and
progress lines would come out on spark-submit's stdout, the stream that
carries the JSON result. :func:`stderr_to_driver_jvm` sends this process's
``sys.stderr`` to the JVM's ``System.err`` (spark-submit's stderr) through
the gateway while a command runs, falling back to the merged stream if the
gateway fails.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

#: Spark's ``log4j2-defaults.properties`` (Spark 4.2) at WARN, with Hadoop's
#: warning that it uses its Java code instead of a native library (printed by every run) dropped.
QUIET_LOG4J2 = """\
# airflow-delta-provider: Spark's log4j2-defaults.properties at WARN (the Spark CLI without --debug).
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.metastore.name = org.apache.hadoop.hive.metastore.RetryingHMSHandler
logger.metastore.level = fatal
logger.metastore2.name = org.apache.hadoop.hive.metastore.ObjectStore
logger.metastore2.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
logger.parquet2.name = parquet.CorruptStatistics
logger.parquet2.level = error
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
"""

#: The JVM option (and system property) that names a log4j 2 configuration file.
LOG4J2_CONFIGURATION_FILE = "log4j2.configurationFile"
#: The driver JVM's options; Spark reads them when it launches the driver.
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: Spark's setting of the root log level, applied as the SparkContext starts.
SPARK_LOG_LEVEL = "spark.log.level"


def under_spark_submit(environ: Mapping[str, str] | None = None) -> bool:
    """Whether spark-submit runs this process (its JVM is up and waits on the gateway's port)."""
    return "PYSPARK_GATEWAY_PORT" in (os.environ if environ is None else environ)


def quiet_log4j2_file() -> Path:
    """The file holding :data:`QUIET_LOG4J2`, written once per content, atomically."""
    digest = hashlib.sha256(QUIET_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"airflow-delta-provider-log4j2-{digest}.properties"
    if not path.is_file():
        fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(QUIET_LOG4J2)
        os.replace(scratch, path)
    return path


def spark_log_conf(conf: Mapping[str, str], debug: bool, launching: bool) -> dict[str, str]:
    """The settings that make Spark's log quiet (or INFO with ``debug``) for a
    SparkContext about to start with ``conf``. ``launching``: this process
    launches the driver JVM (no spark-submit runs it)."""
    if debug or not launching:
        return {} if SPARK_LOG_LEVEL in conf else {SPARK_LOG_LEVEL: "INFO" if debug else "WARN"}
    options = conf.get(DRIVER_JAVA_OPTIONS, "")
    if LOG4J2_CONFIGURATION_FILE in options:
        return {}
    quiet = f"-D{LOG4J2_CONFIGURATION_FILE}={quiet_log4j2_file().as_uri()}"
    return {DRIVER_JAVA_OPTIONS: f"{options} {quiet}".strip()}


class _JvmStderr(io.TextIOBase):
    """A text stream that writes to the driver JVM's ``System.err`` (else to ``fallback``)."""

    def __init__(self, jvm: Any, fallback: TextIO) -> None:
        self._err = jvm.java.lang.System.err
        self._fallback = fallback

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        try:
            self._err.print(text)
            self._err.flush()
        except Exception:  # the gateway is gone (the JVM is ending): the merged stream still works
            self._fallback.write(text)
            self._fallback.flush()
        return len(text)

    def flush(self) -> None:
        self._fallback.flush()


@contextmanager
def stderr_to_driver_jvm(jvm: Any | None) -> Iterator[None]:
    """Within the block, ``sys.stderr`` writes to ``jvm``'s ``System.err``
    (None: no JVM, nothing changes)."""
    if jvm is None:
        yield
        return
    saved = sys.stderr
    sys.stderr = _JvmStderr(jvm, saved)
    try:
        yield
    finally:
        sys.stderr = saved


def submitting_jvm() -> Any | None:
    """The JVM of the spark-submit that runs this process, through its gateway; None otherwise."""
    if not under_spark_submit():
        return None
    from pyspark import SparkContext

    SparkContext._ensure_initialized()
    return SparkContext._jvm


__all__ = [
    "DRIVER_JAVA_OPTIONS",
    "LOG4J2_CONFIGURATION_FILE",
    "QUIET_LOG4J2",
    "SPARK_LOG_LEVEL",
    "quiet_log4j2_file",
    "spark_log_conf",
    "stderr_to_driver_jvm",
    "submitting_jvm",
    "under_spark_submit",
]
