"""The SparkSession the engine runs on, with the settings Delta files need.

Some settings are required for the files we write to be what Delta readers
expect (INT64 microsecond timestamps, snappy, UTC partition values); those are
always set. Others are only defaults (the UI off), applied when neither the
caller nor spark-submit chose a value.

One Spark release on both sides
-------------------------------
The Python side (``pyspark/version.py``) and the JVM (``spark.version``) must
be the same Spark release line. A pip ``pyspark-client`` of another release
installed over ``pyspark`` (they share the ``pyspark/`` folder), or a cluster
image whose Python packages do not match its Spark, mixes two releases, which
fails later in obscure ways. :func:`check_spark_version` compares the two
(major.minor) right after the session starts, one JVM call, and refuses with
:class:`~airflow_delta_provider.delta.errors.UnsupportedFeatureError`.

Store credentials on the executors
----------------------------------
In ``arrow`` I/O mode the executors' Python workers reach the store through
obstore, which reads each cloud's variables (``AWS_*``, ``AZURE_*``,
``GOOGLE_*``) from its process environment.

- Non-local masters (standalone, YARN, Kubernetes, ``local-cluster``): the
  executors run elsewhere and do not have the driver's environment. The
  session copies the driver's store variables
  (:func:`~airflow_delta_provider.delta.storage.options.credential_env`)
  into ``spark.executorEnv.<NAME>`` on the builder (:func:`executor_env_conf`).
  They travel inside the application's SparkConf and reach each executor as
  process environment, never as a command-line argument. A value the caller or
  spark-submit already set for the same ``spark.executorEnv.<NAME>`` wins.
  (On Kubernetes the variables land in the executor pod spec; use
  ``spark.kubernetes.executor.secretKeyRef.*`` where that matters.)
- Local masters (``local``, ``local[N]``, ``local[*]``): the executor is the
  driver JVM, and its Python workers are forked from it with the JVM's
  environment plus ``spark.executorEnv.*``. The JVM is launched by the first
  SparkContext with the driver process's environment of that moment, so the
  workers see every variable the driver had when the session started;
  nothing is copied. Checked with Spark 4.2: a variable set in ``os.environ``
  before the session is seen by a worker, one set after it is not (a worker
  only sees it if the session is created after the variable is set).

The Python of the workers
-------------------------
PySpark starts its Python workers with ``PYSPARK_PYTHON``, read once when the
SparkContext starts, else with ``python3`` from PATH, not with the driver's
interpreter. A driver run from a virtualenv that is not on PATH (cron,
systemd, a Docker entrypoint calling ``/venv/bin/python``) would get workers
without pyarrow, and every ``arrow`` job would fail with
``ModuleNotFoundError``. So on a local master, where the workers run on this
machine, a session started here has its SparkContext take
``spark.pyspark.python`` when that is configured, else this interpreter (through
``PYSPARK_PYTHON``, set while the context starts and then unset again),
unless ``PYSPARK_PYTHON`` is already set (:func:`worker_python`). Remote
executors keep the cluster's Python: it needs pyarrow and obstore for
``arrow`` I/O (see the installation docs).

Spark hides a setting's value in its UI, event log and environment listings
when its name matches ``spark.redaction.regex``, by default
:data:`SPARK_DEFAULT_REDACTION_REGEX`. That covers ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AZURE_CLIENT_SECRET`` and ``AZURE_STORAGE_SAS_TOKEN``,
but not ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_ACCESS_KEY``,
``AZURE_STORAGE_SAS_KEY`` or ``GOOGLE_SERVICE_ACCOUNT_KEY``. So when a copied
name is a secret
(:func:`~airflow_delta_provider.delta.storage.options.is_secret_key`) that the
regex misses, the names are appended to ``spark.redaction.regex``. Non-secret
variables (``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, endpoints) stay visible.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

import pyspark
from pyspark.sql import SparkSession

from airflow_delta_provider.delta.errors import UnsupportedFeatureError
from airflow_delta_provider.delta.storage.options import (
    CREDENTIAL_ENV_PREFIXES,
    credential_env,
    is_secret_key,
)
from airflow_delta_provider.spark.runtime.driver_output import spark_log_conf, under_spark_submit

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
    # Variant columns are written unshredded (a struct of binary value and
    # metadata), as the variantType feature requires without variantShredding,
    # and with no Parquet VARIANT annotation, as delta-spark 4.0 writes them.
    "spark.sql.variant.writeShredding.enabled": "false",
    "spark.sql.parquet.variant.annotateLogicalType.enabled": "false",
    # Spark 4.2 rewrites a scanned variant into a struct of the paths a query
    # reads, dropping the column's metadata: a rewrite under column mapping's
    # id mode would lose the variant's parquet field id, and its values with it.
    "spark.sql.variant.pushVariantIntoScan": "false",
    # Staging folders are removed whole; no _SUCCESS markers are needed.
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
}

#: Settings applied only when nobody configured them.
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: Spark's default ``spark.redaction.regex`` (checked against the JVM's in the tests).
SPARK_DEFAULT_REDACTION_REGEX = "(?i)secret|password|token|access[.]?key"

_EXECUTOR_ENV = "spark.executorEnv."
_REDACTION_REGEX = "spark.redaction.regex"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAJOR_MINOR = re.compile(r"(\d+)\.(\d+)")


def get_or_create_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "airflow-delta-provider",
    debug: bool | None = None,
) -> SparkSession:
    """Return the active SparkSession, or start one configured for Delta writes.

    ``master`` is left to spark-submit (or pyspark's ``local[*]``) when None.
    ``conf`` entries win over :data:`DEFAULT_CONF`; :data:`REQUIRED_CONF` wins
    over both, because the files would not be valid Delta data otherwise.
    For a non-local master the driver's store variables are copied to the
    executors (:func:`executor_env_conf`). Raises
    :class:`~airflow_delta_provider.delta.errors.UnsupportedFeatureError` when
    PySpark and the JVM are different Spark releases.

    ``debug`` sets Spark's log for a SparkContext this call starts
    (:mod:`.driver_output`): False quiet (warnings and errors), True INFO;
    None leaves it as configured.
    """
    from pyspark import SparkContext

    conf = dict(conf or {})
    submitted = _submitted_conf()
    if debug is not None and SparkContext._active_spark_context is None:
        launching = SparkContext._gateway is None and not under_spark_submit()
        conf.update(spark_log_conf({**dict(submitted.getAll()), **conf}, debug, launching))
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in DEFAULT_CONF.items():
        if key not in conf and not submitted.contains(key):
            builder = builder.config(key, value)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if SparkContext._active_spark_context is None:  # a running context has its executors already
        configured = {**dict(submitted.getAll()), **conf}
        effective_master = master or configured.get("spark.master") or "local[*]"
        for key, value in executor_env_conf(effective_master, configured=configured).items():
            builder = builder.config(key, value)
        python = worker_python(effective_master, configured)
    else:
        python = None
    for key, value in REQUIRED_CONF.items():
        builder = builder.config(key, value)
    if python:
        # Read once by the SparkContext about to start (its pythonExec), then
        # taken back: the process's environment stays as the caller left it.
        os.environ["PYSPARK_PYTHON"] = python
        try:
            session = builder.getOrCreate()
        finally:
            del os.environ["PYSPARK_PYTHON"]
    else:
        session = builder.getOrCreate()
    check_spark_version(pyspark.__version__, session.version, os.path.dirname(pyspark.__file__))
    # getOrCreate may return a session started elsewhere: the SQL settings are
    # runtime settings, so make sure they hold there too.
    for key, value in REQUIRED_CONF.items():
        if not key.startswith("spark.hadoop."):
            session.conf.set(key, value)
    return session


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM, no SparkContext in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_local_master(master: str) -> bool:
    """Whether executors run inside the driver JVM (``local``, ``local[N]``, ``local[N,F]``)."""
    return master == "local" or master.startswith("local[")


def worker_python(master: str, configured: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str | None:
    """The interpreter local Python workers must run, when PySpark would pick
    ``python3`` from PATH instead; None when ``PYSPARK_PYTHON`` is set or the
    executors are remote. Pure."""
    environ = os.environ if environ is None else environ
    if "PYSPARK_PYTHON" in environ or not is_local_master(master):
        return None
    return configured.get("spark.pyspark.python") or sys.executable


def executor_env_conf(
    master: str,
    environ: Mapping[str, str] | None = None,
    configured: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The settings that hand the driver's store variables to remote executors.

    For a non-local ``master``: ``spark.executorEnv.<NAME>`` for each
    ``AWS_*``/``AZURE_*``/``GOOGLE_*`` variable of ``environ`` (default
    ``os.environ``) that ``configured`` (the settings already chosen) does not
    set, and ``spark.redaction.regex`` extended with the secret names Spark
    would otherwise show. Empty for a local master. Pure: reads no JVM.
    """
    if is_local_master(master):
        return {}
    configured = configured or {}
    out = {
        f"{_EXECUTOR_ENV}{name}": value
        for name, value in sorted(credential_env(environ).items())
        if _ENV_NAME.fullmatch(name) and f"{_EXECUTOR_ENV}{name}" not in configured
    }
    regex = configured.get(_REDACTION_REGEX, SPARK_DEFAULT_REDACTION_REGEX)
    names = [key[len(_EXECUTOR_ENV) :] for key in {**configured, **out} if key.startswith(_EXECUTOR_ENV)]
    shown = sorted(
        name
        for name in names
        if name.startswith(CREDENTIAL_ENV_PREFIXES)
        and _ENV_NAME.fullmatch(name)
        and is_secret_key(name)
        and not _redacted_by(regex, _EXECUTOR_ENV + name)
    )
    if shown:
        out[_REDACTION_REGEX] = "|".join([regex, *shown])
    return out


def check_spark_version(python_version: str, jvm_version: str, python_location: str | None = None) -> None:
    """Refuse unless PySpark and the JVM share the Spark release line (major.minor)."""
    py, jvm = _MAJOR_MINOR.match(python_version), _MAJOR_MINOR.match(jvm_version)
    if py and jvm and py.groups() == jvm.groups():
        return
    where = f" at {python_location}" if python_location else ""
    raise UnsupportedFeatureError(
        f"PySpark {python_version}{where} does not match the JVM's Spark {jvm_version} (spark.version): "
        "the Python side and the JVM must be the same Spark release (major.minor). Install the pyspark "
        "release of the cluster, and no pyspark-client of another release over it (see the installation docs)"
    )


def _redacted_by(regex: str, key: str) -> bool:
    """Whether Spark's redaction ``regex`` (a Java regex) matches ``key``; unsure counts as no."""
    try:
        return re.search(regex, key) is not None
    except re.error:
        return False


def _submitted_conf() -> Any:
    """The configuration spark-submit handed the driver (empty otherwise).

    Under spark-submit the JVM already runs and holds ``--conf`` values as
    system properties; a plain ``python`` run has no JVM yet, and starting
    one here would fix its options before ours are known.
    """
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is None and not under_spark_submit():
        return SparkConf(loadDefaults=False)
    SparkContext._ensure_initialized()
    return SparkConf()
