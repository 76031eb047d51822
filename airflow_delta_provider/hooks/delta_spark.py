"""Run one Delta operation as one spark-submit, and read its result from the log.

:class:`DeltaSparkHook` builds one :class:`SparkSubmitHook` per run, through
its constructor's public arguments, and runs it with its public ``submit()``.
The connection, conf, sizing, deploy mode, env_vars, Kerberos and kill
handling are all Spark's. The Delta hook adds:

* the application, the package's Spark CLI
  (``airflow_delta_provider/spark/__main__.py``), with the Delta core shipped
  beside it in ``--py-files``, and the operation as its arguments;
* the local Python processes pointed at this interpreter
  (``spark.pyspark.python``), pip's ``spark-submit`` found beside it;
* the store's credentials in spark-submit's environment, never on its
  command line;
* the result from ``_delta_log``, and a retried task whose earlier try
  already committed gets that commit back without a submit
  (:class:`~.delta_operation.DeltaOperationMixin`);
* the application's one-line error as the task's error.

It overrides no private member of :class:`SparkSubmitHook` and assigns none of
its private attributes (``tests/hooks/test_delta_spark.py`` checks this), so
a refactor inside the apache-spark provider cannot change what it submits.

Neither pyspark nor pyarrow is imported here; the Delta core is imported
inside the methods that read the log.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.hooks.spark_submit import (
    ALLOWED_SPARK_BINARIES,
    DEFAULT_SPARK_BINARY,
    SparkSubmitHook,
)
from airflow.sdk.bases.hook import BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_delta_provider.hooks.delta_operation import (
    OPERATIONS,
    DeltaOperationMixin,
    DeltaOperationResult,
    is_permanent,
    operation_token,
)
from airflow_delta_provider.spark.runtime.application import APPLICATION
from airflow_delta_provider.spark.runtime.progress import Heartbeat, progress_interval
from airflow_delta_provider.spark.runtime.progress_line import is_progress_line
from airflow_delta_provider.utils.package_zip import build_package_zip

if TYPE_CHECKING:
    from airflow.sdk import Connection

# The Spark CLI reports bad input as one stderr line, "ClassName: message";
# a crash ends its traceback the same way, possibly with a dotted module path.
_ERROR_LINE_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception)): \S")

#: A line of Spark's own log in log4j's default console layout: ``26/11/27 21:39:37 INFO Utils: ...``.
_SPARK_LOG_LINE_RE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?P<level>[A-Z]+) ")
#: A line that continues a multi-line Spark record (a query plan, an RDD's name): it starts with a
#: space or a plan's punctuation, never with a word, a path or a JSON object; or it is the tail of a
#: DAGScheduler record cut before its RDD (``MapPartitionsRDD[6] at collect at .../prune.py:98), ...``).
_CONTINUATION_RE = re.compile(r"^(?:\s|[:+|\[\]()<>-]|\w*RDD\[\d+\] at )")
#: Spark log levels whose lines a failed task's error may quote.
_PROBLEM_LEVELS = frozenset({"WARN", "ERROR", "FATAL"})
#: How many warning and error lines a crash's error quotes.
_PROBLEM_LINES = 20
#: SparkSubmitHook's failure names spark-submit's exit code.
_EXIT_CODE_RE = re.compile(r"Error code is: (-?\d+)")
#: SparkSubmitHook's log message with the (masked) spark-submit command.
_SUBMIT_COMMAND_MESSAGE = "Spark-Submit cmd: %s"
#: The Spark CLI's switch for a verbose run (the operators' ``debug``).
_DEBUG_FLAG = "--debug"

#: SparkSubmitHook's constructor arguments, the ones DeltaSparkHook passes through.
_SUBMIT_ARGUMENTS = frozenset(inspect.signature(SparkSubmitHook.__init__).parameters) - {"self"}
#: Arguments that release spark-submit before the application ends; the hook
#: must wait for the commit before it reads the log.
_NOT_WAITING = ("track_driver_via_k8s_api", "yarn_track_via_rm_api")
#: Standalone driver states (org.apache.spark.deploy.master.DriverState) that end a driver.
_DRIVER_ENDED = frozenset({"FINISHED", "KILLED", "FAILED", "ERROR"})
#: Consecutive failed status polls before a standalone driver is given up on.
_MAX_MISSED_POLLS = 10


def application_path() -> str:
    """The Spark CLI's module file, which spark-submit runs."""
    return APPLICATION


def _read_as_spark(conn: Connection) -> Connection:
    """A ``delta_spark`` connection is read as a ``spark`` one."""
    if conn.conn_type == DeltaSparkHook.conn_type:
        conn.conn_type = "spark"
    return conn


class _SparkOutput:
    """What the hook keeps of Spark's output, and which lines the task log shows.

    Kept: the result line, the error line, and the last warnings and errors
    (the task's error when the application crashed without an error line).
    The application's progress lines (a long job's stage and tasks done) are
    always shown. Unless ``verbose``, Spark's INFO records (with their continuation lines),
    the result line (the operator logs the result) and the error line (the
    task's error repeats it) go to the debug level: a task log then shows
    Spark's warnings and what the operation did, not 1,500 lines of start-up.
    """

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self.result: dict[str, Any] | None = None
        self.error_line: str | None = None
        self.error_name: str | None = None
        self.problems: deque[str] = deque(maxlen=_PROBLEM_LINES)
        self.heartbeat: Heartbeat | None = None  # told of each line the task log shows
        self._hiding = False  # the last Spark record was quieted: its continuation lines are too

    def observe(self, line: str) -> bool:
        """Take note of one line of output; whether the task log shows it at its own level."""
        shown = self._observe(line)
        if shown and self.heartbeat is not None:
            self.heartbeat.heard()
        return shown

    def _observe(self, line: str) -> bool:
        if self._hiding and _CONTINUATION_RE.match(line):  # a quieted record's plan or RDD name, line by line
            return False
        self._hiding = False
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                parsed = json.loads(line)
            except ValueError:
                return True
            if isinstance(parsed, dict) and {"operation", "version"} <= parsed.keys():
                self.result = parsed
                return self.verbose  # the operator logs the result
            return True
        if is_progress_line(line):  # the application's own progress line: shown, and no problem
            return True
        spark = _SPARK_LOG_LINE_RE.match(line)
        if spark:
            if spark.group("level") in _PROBLEM_LEVELS:
                self.problems.append(line)
                return True
            self._hiding = not self.verbose
            return self.verbose
        match = _ERROR_LINE_RE.match(line)
        if match:
            self.error_line, self.error_name = line, match.group("name")
            return self.verbose
        if line and not line.startswith("at "):  # a JVM crash's own lines, not its stack frames
            self.problems.append(line)
        return True

    def shows(self, args: tuple[Any, ...]) -> bool:
        """Whether a log call of SparkSubmitHook's keeps its level."""
        if len(args) == 1 and isinstance(args[0], str):
            return self.observe(args[0])
        return self.verbose or not (args and args[0] == _SUBMIT_COMMAND_MESSAGE)


class _ObservedLog:
    """A logger that forwards every call, first showing it to the run's
    :class:`_SparkOutput`, which may move an INFO record to DEBUG.

    SparkSubmitHook logs each line of spark-submit's output as one message
    with no arguments; its own messages carry arguments.
    """

    def __init__(self, logger: Any, output: _SparkOutput) -> None:
        self.logger = logger
        self.output = output

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.logger, name)
        if name not in ("debug", "info", "warning", "warn", "error", "critical", "exception", "msg"):
            return attribute

        def observed(*args: Any, **kwargs: Any) -> Any:
            if not self.output.shows(args) and name == "info":
                return self.logger.debug(*args, **kwargs)
            return attribute(*args, **kwargs)

        return observed


class _DeltaSparkSubmitHook(SparkSubmitHook):
    """The SparkSubmitHook of one run. It changes two public members, nothing else:

    * :meth:`get_connection` reads a ``delta_spark`` connection as ``spark``;
    * :attr:`log` shows each logged line to the run's :class:`_SparkOutput`,
      which keeps what matters and quiets Spark's INFO lines (see
      :class:`DeltaSparkHook` for why).
    """

    def __init__(self, *, output: _SparkOutput, **spark_submit_kwargs: Any) -> None:
        # Set first: the constructor already logs (connection lookup).
        self.output = output
        super().__init__(**spark_submit_kwargs)

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        return _read_as_spark(super().get_connection(conn_id))

    @property
    def log(self) -> Any:
        return _ObservedLog(super().log, self.output)


@dataclass(frozen=True)
class SparkTarget:
    """Where a submit goes, read from the connection by SparkSubmitHook's documented rules.

    The hook needs these facts before it builds the submit (which Python the
    local processes run, whether credentials may travel, how env_vars reach
    the process), and SparkSubmitHook keeps its own reading private; a test
    checks that both readings agree.
    """

    master: str
    deploy_mode: str | None
    spark_binary: str
    rest_scheme: str = "http"
    rest_port: int = 6066

    @property
    def cluster(self) -> bool:
        return self.deploy_mode == "cluster"

    @property
    def yarn(self) -> bool:
        return "yarn" in self.master

    @property
    def kubernetes(self) -> bool:
        return "k8s" in self.master

    @property
    def standalone_cluster(self) -> bool:
        """Spark standalone in cluster mode: spark-submit returns once the driver is submitted."""
        return self.master.startswith("spark://") and self.cluster


class DeltaSparkHook(DeltaOperationMixin, BaseHook):
    """Submit Delta operations to Spark with spark-submit.

    Every :class:`SparkSubmitHook` argument is accepted and passed to the
    SparkSubmitHook that each :meth:`run` builds (``conf``,
    ``executor_memory``, ``driver_memory``, ``env_vars``, ``deploy_mode``,
    ``spark_binary``, ...), except ``application_args``, which :meth:`run`
    builds, and ``track_driver_via_k8s_api``/``yarn_track_via_rm_api``, which
    would end the submit before the commit it must read. Extra ``py_files``
    are shipped after the package's own zip.

    The connection is a Spark connection (type ``spark``, default
    ``spark_default``); type ``delta_spark`` is read the same way.

    **How the application's output comes back.** SparkSubmitHook hands no
    output back: ``submit()`` returns only a standalone driver id, and the
    application's lines pass through its log alone (``self.log.info(line)``
    for each line). Reading them through the provider's private log
    processing would tie every task to its internals, and a ``logging``
    handler never sees them: Airflow 3 logs through structlog straight to
    the task supervisor. So the run's SparkSubmitHook overrides the public
    ``log`` property with a logger that forwards every call unchanged and
    shows each line to the hook as it goes by (:class:`_DeltaSparkSubmitHook`).
    Two lines matter: the application's one-line error (the task's error,
    permanent for bad input) and its printed result, which is only a
    fallback: the result is read from ``_delta_log``, the channel that also
    works in cluster deploy mode, where driver output never comes back.

    :param conn_id: The Spark connection.
    :param name: The Spark application's name (default
        ``delta-<operation>: <table>``).
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection holding the table store's
        credentials (see :mod:`~airflow_delta_provider.utils.storage_connection`).
        They reach the Spark application through the spark-submit process's
        environment only, never its command line; the driver copies them to
        remote executors. None: each cloud's own chain, on both sides.
    :param catalog_conn_id: The catalog that resolves a table named ``uc://``,
        ``glue://`` or ``hms://`` (:mod:`~airflow_delta_provider.hooks.delta_catalog`);
        None: the environment's. The application gets the location, and Unity
        Catalog's vended credentials by environment, as ``storage_conn_id``'s,
        with the name and the catalog's URL and token to renew them.
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
        catalog_conn_id: str | None = None,
        package_cache_dir: str | os.PathLike[str] | None = None,
        **spark_submit_kwargs: Any,
    ) -> None:
        if "application_args" in spark_submit_kwargs:
            raise TypeError("DeltaSparkHook builds application_args itself; pass them to run()")
        unknown = sorted(set(spark_submit_kwargs) - _SUBMIT_ARGUMENTS - {"conn_id", "name"})
        if unknown:
            raise TypeError(f"DeltaSparkHook got unexpected keyword arguments: {', '.join(unknown)}")
        not_waiting = [arg for arg in _NOT_WAITING if spark_submit_kwargs.get(arg)]
        if not_waiting:
            raise ValueError(
                f"DeltaSparkHook waits for the application to end, then reads the commit from the table's "
                f"log; {' and '.join(not_waiting)} would end spark-submit first. Leave it unset"
            )
        super().__init__()
        self.conn_id = conn_id
        self.name = name
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id
        self.package_cache_dir = package_cache_dir
        self.spark_submit_kwargs = spark_submit_kwargs
        #: The SparkSubmitHook of the running (or last) submit; :meth:`on_kill` stops it.
        self.spark_submit_hook: SparkSubmitHook | None = None
        # Standalone cluster mode: SparkSubmitHook leaves post-submit commands to
        # whoever tracks the driver, here the Delta hook.
        self._commands_after_driver: list[str] = []

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        """The connection, with type ``delta_spark`` read as ``spark``."""
        return _read_as_spark(super().get_connection(conn_id))

    def get_conn(self) -> Connection:
        """The Spark connection (type ``delta_spark`` read as ``spark``)."""
        return self.get_connection(self.conn_id)

    def _execute(
        self, operation: str, table: str, arguments: Sequence[str], token: str | None
    ) -> dict[str, Any] | None:
        """One spark-submit; the result line the driver printed (lost in cluster deploy mode)."""
        self._check_connection()
        target = self.spark_target()
        if self.storage_options and target.cluster:
            raise AirflowFailException(
                f"storage_conn_id {self.storage_conn_id!r} cannot be used in cluster deploy mode: the driver "
                "runs remotely, and its credentials could only travel on the spark-submit command line. Give "
                "the cluster its own credentials (instance profile, workload identity, Hadoop settings) and "
                "drop storage_conn_id"
            )
        output = _SparkOutput(verbose=_DEBUG_FLAG in arguments)
        hook_kwargs, popen_env = self._submit_arguments(operation, table, arguments, token, target)
        self.spark_submit_hook = _DeltaSparkSubmitHook(output=output, **hook_kwargs)
        self._submit_and_wait(self.spark_submit_hook, output, operation, table, target, popen_env)
        return output.result

    def on_kill(self) -> None:
        """Stop the running spark-submit (and its driver or application), as SparkSubmitHook does."""
        if self.spark_submit_hook is not None:
            self.spark_submit_hook.on_kill()
        self._run_commands_after_driver()

    def _check_connection(self) -> None:
        """Fail, saying how to define it, when the Spark connection is not defined.

        SparkSubmitHook would submit to ``yarn`` instead, with one info line
        (``Could not load connection string spark_default, defaulting to
        yarn``): on any machine without YARN, a failure that names neither.
        """
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            self.get_connection(self.conn_id)
        except AirflowNotFoundException:
            variable = f"AIRFLOW_CONN_{self.conn_id.upper()}"
            raise AirflowFailException(
                f"the Spark connection {self.conn_id!r} is not defined. Define it in the environment, e.g. "
                f"""{variable}='{{"conn_type": "spark", "host": "local[*]"}}', or in the UI (Admin > """
                "Connections: type Spark, host local[*], spark://master:7077, yarn or k8s://...), "
                "or pass conn_id= an existing one (docs/connections.rst)"
            ) from None

    # --- Building the spark-submit ---------------------------------------------

    def spark_target(self) -> SparkTarget:
        """Master, deploy mode and binary, as SparkSubmitHook reads them from the connection."""
        kwargs = self.spark_submit_kwargs
        binary = kwargs.get("spark_binary")
        try:
            conn = self.get_connection(self.conn_id)
        except AirflowException:
            # SparkSubmitHook's fallback: YARN, deploy mode and binary unset.
            return SparkTarget(master="yarn", deploy_mode=None, spark_binary=binary or DEFAULT_SPARK_BINARY)
        if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
            master = conn.host
        else:
            master = f"{conn.conn_type}://{conn.host or ''}"
        if conn.port:
            master = f"{master}:{conn.port}"
        extra = conn.extra_dejson
        return SparkTarget(
            master=master,
            deploy_mode=kwargs.get("deploy_mode") or extra.get("deploy-mode"),
            spark_binary=binary or extra.get("spark-binary", DEFAULT_SPARK_BINARY),
            rest_scheme=extra.get("rest-scheme", "http"),
            rest_port=int(extra.get("rest-port", 6066)),
        )

    def _renewal_env(self) -> dict[str, str]:
        """For a Unity Catalog name being run: its name and the catalog's URL and token, by
        environment, so that the application renews the credentials vended with the location
        it is given, for its driver's reads and commit after a long job (docs/catalogs.rst)."""
        if self._catalog is None or self._catalog.lease() is None:
            return {}
        from airflow_delta_provider.delta.catalog.settings import unity_renewal_env
        from airflow_delta_provider.hooks.delta_catalog import DeltaCatalogHook

        return unity_renewal_env(DeltaCatalogHook(self.catalog_conn_id).settings(), str(self._catalog.ref))

    def _submit_arguments(
        self, operation: str, table: str, arguments: Sequence[str], token: str | None, target: SparkTarget
    ) -> tuple[dict[str, Any], dict[str, str] | None]:
        """SparkSubmitHook's constructor arguments for this run, and the spark-submit process's
        environment when the hook must set variables of its own (None: SparkSubmitHook's)."""
        kwargs = dict(self.spark_submit_kwargs)
        application_args = [operation, table, *arguments]
        if token:
            application_args += ["--token", token]
        shipped = str(build_package_zip(self.package_cache_dir))
        user_conf = dict(kwargs.get("conf") or {})
        env_vars = dict(kwargs.get("env_vars") or {})
        spark_binary = self._spark_binary(target)

        own_env = {**self.storage_options, **self._renewal_env()}
        spark_home = self._pip_spark_home(spark_binary or target.spark_binary, env_vars)
        if spark_home is not None:
            own_env["SPARK_HOME"] = spark_home
        hook_env_vars, env_conf, popen_env = self._environment(target, env_vars, own_env)

        if target.standalone_cluster:
            self._commands_after_driver = list(kwargs.pop("post_submit_commands", None) or [])
        kwargs.update(
            conn_id=self.conn_id,
            name=self.name or f"delta-{operation}: {table}",
            application_args=application_args,
            py_files=",".join(p for p in (shipped, kwargs.get("py_files")) if p),
            conf={**self._python_conf(target, user_conf, env_vars), **user_conf, **env_conf},
            env_vars=hook_env_vars,
            spark_binary=spark_binary,
        )
        return kwargs, popen_env

    @staticmethod
    def _environment(
        target: SparkTarget, env_vars: dict[str, Any], own: dict[str, str]
    ) -> tuple[dict[str, Any] | None, dict[str, str], dict[str, str] | None]:
        """How ``env_vars`` and the hook's own variables reach spark-submit.

        The hook's own variables (the store's credentials, SPARK_HOME) must
        reach the process's environment and never its command line. They go
        as ``submit(env=...)``, a Popen argument, which SparkSubmitHook keeps
        unless it builds an environment of its own from ``env_vars``. So:

        * no variables of its own: ``env_vars`` as given, all SparkSubmitHook's;
        * no ``env_vars``, or Kubernetes (where they become
          ``spark.kubernetes.driverEnv.*`` only): ours in ``submit(env=...)``;
        * YARN, where ``env_vars`` become ``spark.yarn.appMasterEnv.*`` and
          the process's environment: both written here, with ours added to
          the environment only;
        * elsewhere ``env_vars`` only reach the process's environment (and
          are refused in standalone cluster mode): ours join them.

        :return: ``env_vars`` for SparkSubmitHook, conf to add, and the
            environment for ``submit(env=...)`` (None: SparkSubmitHook's).
        """
        if not own:
            return env_vars or None, {}, None
        if not env_vars or target.kubernetes:
            return env_vars or None, {}, {**os.environ, **own}
        if target.yarn:
            conf = {f"spark.yarn.appMasterEnv.{key}": str(value) for key, value in env_vars.items()}
            return None, conf, {**os.environ, **{k: str(v) for k, v in env_vars.items()}, **own}
        return {**env_vars, **own}, {}, None

    @staticmethod
    def _python_conf(target: SparkTarget, conf: Mapping[str, Any], env_vars: Mapping[str, Any]) -> dict[str, str]:
        """Point the local Python processes at this interpreter unless told otherwise.

        In local mode (driver and executors) and client mode (the driver) Spark
        would otherwise start whatever ``python3`` is first on PATH, which
        need not have pyarrow and sqlglot. Remote executors keep the cluster's
        own Python.
        """
        configured = {**os.environ, **env_vars}
        if {"spark.pyspark.python", "spark.pyspark.driver.python"} & conf.keys() or (
            {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"} & configured.keys()
        ):
            return {}
        if target.master.startswith("local"):
            return {"spark.pyspark.python": sys.executable}
        if not target.cluster:
            return {"spark.pyspark.driver.python": sys.executable}
        return {}

    def _spark_binary(self, target: SparkTarget) -> str | None:
        """``spark_binary`` for SparkSubmitHook: pip's spark-submit beside this
        interpreter when the binary is not on PATH; else as the user gave it."""
        given = self.spark_submit_kwargs.get("spark_binary")
        binary = target.spark_binary
        # A connection's spark-binary extra stays SparkSubmitHook's to check.
        if given is None and binary not in ALLOWED_SPARK_BINARIES:
            return None
        if os.sep not in binary and shutil.which(binary) is None:
            sibling = Path(sys.executable).parent / binary
            if sibling.is_file():
                return str(sibling)
        return given

    @staticmethod
    def _pip_spark_home(binary: str, env_vars: Mapping[str, Any]) -> str | None:
        """SPARK_HOME for pip's spark-submit, when it is the one used and none is set.

        pip's launcher finds SPARK_HOME by running ``find_spark_home.py`` with
        whatever ``python3`` is on PATH, which may not have pyspark. This
        interpreter does: its pyspark folder is the home (found without
        importing pyspark). A spark-submit of a Spark install is left alone.
        """
        if "SPARK_HOME" in os.environ or "SPARK_HOME" in env_vars:
            return None
        resolved = shutil.which(binary)
        if resolved is None or not (Path(resolved).parent / "find_spark_home.py").is_file():
            return None
        spec = importlib.util.find_spec("pyspark")
        if spec is None or not spec.submodule_search_locations:
            return None
        return str(Path(next(iter(spec.submodule_search_locations))))

    # --- Running it ------------------------------------------------------------

    def _submit_and_wait(
        self,
        hook: SparkSubmitHook,
        output: _SparkOutput,
        operation: str,
        table: str,
        target: SparkTarget,
        popen_env: dict[str, str] | None,
    ) -> None:
        """spark-submit, wait for the application, fail with its one-line error."""
        try:
            # A line each interval the task log would otherwise be silent (the JVM starting, the driver's own work).
            with Heartbeat(hook.log.info, progress_interval()) as output.heartbeat:
                driver_id = hook.submit(application_path(), **({} if popen_env is None else {"env": popen_env}))
            if target.standalone_cluster and driver_id:
                # spark-submit returned once the driver was submitted (provider >= 6.3).
                try:
                    self._wait_for_driver(target, driver_id)
                finally:
                    self._run_commands_after_driver()
        except AirflowException as err:
            # SparkSubmitHook's error holds the whole command line and its last
            # output lines; they are the cause only with debug.
            cause = err if output.verbose else None
            line = output.error_line
            if line is not None:
                message = f"Delta {operation} on {self._named(table)} failed: {line}"
                if is_permanent(output.error_name):
                    raise AirflowFailException(message) from cause
                raise AirflowException(message) from cause
            code = _EXIT_CODE_RE.search(str(err))
            if code is None or output.verbose:
                raise
            problems = "\n".join(output.problems) or "(none; debug=True logs all of its output)"
            raise AirflowException(
                f"Delta {operation} on {self._named(table)} failed: spark-submit exited with code {code.group(1)}, "
                f"reporting no error of the application. Its last warnings and errors:\n{problems}"
            ) from None

    def _wait_for_driver(self, target: SparkTarget, driver_id: str) -> None:
        """Poll the standalone master's REST API until the driver ends; fail unless it FINISHED."""
        import requests

        interval = self.spark_submit_kwargs.get("status_poll_interval", 1)
        hosts = [m.strip().split(":")[0] for m in target.master.removeprefix("spark://").split(",")]
        missed = 0
        while True:
            state = None
            for host in hosts:
                url = f"{target.rest_scheme}://{host}:{target.rest_port}/v1/submissions/status/{driver_id}"
                try:
                    response = requests.get(url, timeout=30)
                    response.raise_for_status()
                    state = response.json().get("driverState")
                except (requests.RequestException, ValueError) as err:
                    self.log.warning("Could not read the state of Spark driver %s from %s: %s", driver_id, host, err)
                    continue
                if state:
                    break
            if state is None:
                missed += 1
                if missed > _MAX_MISSED_POLLS:
                    raise AirflowException(f"Failed to poll the state of Spark driver {driver_id} {missed} times")
            else:
                missed = 0
                self.log.debug("Spark driver %s is %s", driver_id, state)
                if state in _DRIVER_ENDED:
                    if state != "FINISHED":
                        raise AirflowException(f"Spark driver {driver_id} ended as {state}")
                    return
            time.sleep(interval)

    def _run_commands_after_driver(self) -> None:
        """``post_submit_commands`` after a standalone driver, once, as SparkSubmitHook runs them."""
        commands, self._commands_after_driver = self._commands_after_driver, []
        for command in commands:
            try:
                done = subprocess.run(
                    shlex.split(command),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    check=False,
                    timeout=30,
                )
                if done.returncode != 0:
                    self.log.warning("Post-submit command exited with code %d: %s", done.returncode, command)
            except Exception as err:
                self.log.warning("Post-submit command %s failed: %s", command, err)


__all__ = [
    "OPERATIONS",
    "DeltaOperationResult",
    "DeltaSparkHook",
    "SparkTarget",
    "application_path",
    "operation_token",
]
