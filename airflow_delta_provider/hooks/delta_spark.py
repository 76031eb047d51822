"""Run one Delta operation as one spark-submit, and read its result from the log.

:class:`DeltaSparkHook` is a :class:`SparkSubmitHook`: the connection, conf,
sizing, deploy mode, env_vars, Kerberos and kill handling are all Spark's. It
adds three things:

* the application is the package's Spark CLI (``airflow_delta_provider/spark/__main__.py``),
  with the Delta core shipped beside it in ``--py-files``;
* the result comes from ``_delta_log``, and a retried task whose earlier try
  already committed gets that commit back without a submit
  (:class:`~.delta_operation.DeltaOperationMixin`);
* the application's one-line error becomes the task's error.

Neither pyspark nor pyarrow is imported here; the Delta core is imported
inside the methods that read the log.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_delta_provider.hooks.delta_operation import (
    OPERATIONS,
    DeltaOperationMixin,
    DeltaOperationResult,
    is_permanent,
    operation_token,
)
from airflow_delta_provider.utils.package_zip import build_package_zip, package_root

if TYPE_CHECKING:
    from airflow.sdk import Connection

# The Spark CLI reports bad input as one stderr line, "ClassName: message";
# a crash ends its traceback the same way, possibly with a dotted module path.
_ERROR_LINE_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception)): \S")


def application_path() -> str:
    """The Spark CLI's module file, which spark-submit runs."""
    return str(package_root() / "spark" / "__main__.py")


class _SparkOutput:
    """What the hook keeps of Spark's output: the result line and the error line."""

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self.error_line: str | None = None
        self.error_name: str | None = None

    def observe(self, line: str) -> None:
        if line.startswith("{") and line.endswith("}"):
            try:
                parsed = json.loads(line)
            except ValueError:
                return
            if isinstance(parsed, dict) and {"operation", "version"} <= parsed.keys():
                self.result = parsed
            return
        match = _ERROR_LINE_RE.match(line)
        if match:
            self.error_line, self.error_name = line, match.group("name")


class DeltaSparkHook(DeltaOperationMixin, SparkSubmitHook):
    """Submit Delta operations to Spark with spark-submit.

    Every :class:`SparkSubmitHook` argument is accepted and passed through
    (``conf``, ``executor_memory``, ``driver_memory``, ``env_vars``,
    ``deploy_mode``, ``spark_binary``, ...), except ``application_args``,
    which :meth:`run` builds. Extra ``py_files`` are shipped after the
    package's own zip.

    The connection is a Spark connection (type ``spark``, default
    ``spark_default``); type ``delta_spark`` is read the same way.

    :param conn_id: The Spark connection.
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection holding the table store's
        credentials (see :mod:`~airflow_delta_provider.utils.storage_connection`).
        They reach the Spark application through the spark-submit process's
        environment only, never its command line; the driver copies them to
        remote executors. None: each cloud's own chain, on both sides.
    :param package_cache_dir: Where the ``--py-files`` zip is cached
        (default ``~/.cache/airflow-delta-provider``).
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "delta_spark"
    hook_name = "Delta Lake on Spark"

    def __init__(
        self,
        conn_id: str = default_conn_name,
        *,
        name: str | None = None,
        storage_conn_id: str | None = None,
        package_cache_dir: str | os.PathLike[str] | None = None,
        **spark_submit_kwargs: Any,
    ) -> None:
        if "application_args" in spark_submit_kwargs:
            raise TypeError("DeltaSparkHook builds application_args itself; pass them to run()")
        self.storage_conn_id = storage_conn_id
        self._explicit_name = name
        self._package_cache_dir = package_cache_dir
        self._output = _SparkOutput()
        super().__init__(conn_id=conn_id, name=name or "airflow-delta", **spark_submit_kwargs)

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        """The connection, with type ``delta_spark`` read as ``spark``."""
        conn = super().get_connection(conn_id)
        if conn.conn_type == cls.conn_type:
            conn.conn_type = "spark"
        return conn

    def _execute(
        self, operation: str, table: str, arguments: Sequence[str], token: str | None
    ) -> dict[str, Any] | None:
        """One spark-submit; the result line the driver printed (lost in cluster deploy mode)."""
        self._prepare_submit(operation, table, arguments, token)
        self._submit_and_wait(operation, table)
        return self._output.result

    # --- Building the spark-submit ---------------------------------------------

    def _prepare_submit(self, operation: str, table: str, arguments: Sequence[str], token: str | None) -> None:
        self._application_args = [operation, table, *arguments]
        if token:
            self._application_args += ["--token", token]
        shipped = str(build_package_zip(self._package_cache_dir))
        self._py_files = ",".join(p for p in (shipped, self._py_files) if p)
        if self._explicit_name is None:
            self._name = f"delta-{operation}: {table}"
        self._conf = {**self._python_conf(), **self._conf}
        self._output = _SparkOutput()
        if self.storage_options and (self._connection["deploy_mode"] or "client") == "cluster":
            raise AirflowFailException(
                f"storage_conn_id {self.storage_conn_id!r} cannot be used in cluster deploy mode: the driver "
                "runs remotely, and its credentials could only travel on the spark-submit command line. Give "
                "the cluster its own credentials (instance profile, workload identity, Hadoop settings) and "
                "drop storage_conn_id"
            )

    def _build_spark_submit_command(self, application: str) -> list[str]:
        command = super()._build_spark_submit_command(application)
        # Credentials go into the spark-submit process's environment: never
        # on its command line (SparkSubmitHook's env_vars become --conf on
        # YARN and Kubernetes), never in a log line.
        if self.storage_options:
            self._env = {**(self._env or {}), **self.storage_options}
        return command

    def _python_conf(self) -> dict[str, str]:
        """Point the local Python processes at this interpreter unless told otherwise.

        In local mode (driver and executors) and client mode (the driver) Spark
        would otherwise start whatever ``python3`` is first on PATH, which
        need not have pyarrow and sqlglot. Remote executors keep the cluster's
        own Python.
        """
        configured = {**os.environ, **(self._env_vars or {})}
        if {"spark.pyspark.python", "spark.pyspark.driver.python"} & self._conf.keys() or (
            {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"} & configured.keys()
        ):
            return {}
        if self._connection["master"].startswith("local"):
            return {"spark.pyspark.python": sys.executable}
        if (self._connection["deploy_mode"] or "client") == "client":
            return {"spark.pyspark.driver.python": sys.executable}
        return {}

    def _get_spark_binary_path(self) -> list[str]:
        # pip's pyspark puts spark-submit beside the interpreter; find it there
        # when the venv's bin folder is not on PATH.
        binary = self._connection["spark_binary"]
        if os.sep not in binary and shutil.which(binary) is None:
            sibling = Path(sys.executable).parent / binary
            if sibling.is_file():
                binary = str(sibling)
        return [binary]

    def _build_spark_common_args(self) -> list[str]:
        args = super()._build_spark_common_args()
        spark_home = self._pip_spark_home()
        if spark_home is not None:
            self._env = {**(self._env or {}), "SPARK_HOME": spark_home}
        return args

    def _pip_spark_home(self) -> str | None:
        """SPARK_HOME for pip's spark-submit, when it is the one used and none is set.

        pip's launcher finds SPARK_HOME by running ``find_spark_home.py`` with
        whatever ``python3`` is on PATH, which may not have pyspark. This
        interpreter does: its pyspark folder is the home (found without
        importing pyspark). A spark-submit of a Spark install is left alone.
        """
        if "SPARK_HOME" in os.environ or "SPARK_HOME" in (self._env_vars or {}):
            return None
        resolved = shutil.which(self._get_spark_binary_path()[0])
        if resolved is None or not (Path(resolved).parent / "find_spark_home.py").is_file():
            return None
        spec = importlib.util.find_spec("pyspark")
        if spec is None or not spec.submodule_search_locations:
            return None
        return str(Path(next(iter(spec.submodule_search_locations))))

    # --- Running it ------------------------------------------------------------

    def _submit_and_wait(self, operation: str, table: str) -> None:
        """spark-submit, wait for the application, fail with its one-line error."""
        try:
            self.submit(application_path())
            if self._should_track_driver_status:
                # Standalone cluster mode: spark-submit returns at once.
                try:
                    self._start_driver_status_tracking()
                finally:
                    self._run_post_submit_commands()
                if self._driver_status != "FINISHED":
                    raise AirflowException(f"Spark driver {self._driver_id} ended as {self._driver_status}")
        except AirflowException as err:
            line = self._output.error_line
            if line is None:
                raise
            message = f"Delta {operation} on {table} failed: {line}"
            if is_permanent(self._output.error_name):
                raise AirflowFailException(message) from err
            raise AirflowException(message) from err

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        # Spark's output still streams into the task log, line by line, through
        # the parent; this only watches the lines go by.
        super()._process_spark_submit_log(self._watch(itr))

    def _watch(self, itr: Iterator[Any]) -> Iterator[Any]:
        for raw in itr:
            self._output.observe(str(raw).strip())
            yield raw


__all__ = ["OPERATIONS", "DeltaOperationResult", "DeltaSparkHook", "application_path", "operation_token"]
