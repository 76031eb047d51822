"""Run one Delta operation in the task's own process: over Spark Connect, or with no Spark.

spark-submit starts a JVM and a SparkContext for every task: seconds before
any work, even for a CHECKPOINT of a small table. Two modes skip that.

- **Spark Connect.** With a ``spark_connect`` connection
  (apache-airflow-providers-apache-spark's type: ``sc://host:port``, the
  token in the password), the operation runs as a Spark Connect client in the
  task process: the server runs the Spark jobs, the Delta core reads the log
  and commits from here. Many small tasks share one warm server.
- **No Spark** (``engine="python"``): CHECKPOINT, ALTER and RESTORE touch no
  data file, and VACUUM only lists and deletes, so the core does them alone
  (over Spark Connect too: they open no session).

The operation is the very command spark-submit would run
(:mod:`airflow_delta_provider.spark.in_process`), imported when the task
runs, never when a DAG is parsed. Results and retries work as with
spark-submit (:class:`~.delta_operation.DeltaOperationMixin`). The store's
credentials stay in this process: the Spark Connect server's executors use
the server's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.bases.hook import BaseHook
from airflow.sdk.exceptions import AirflowFailException

from airflow_delta_provider.hooks.delta_operation import DeltaOperationMixin, operation_error
from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
from airflow_delta_provider.utils.package_zip import build_package_zip

if TYPE_CHECKING:
    from airflow_delta_provider.operations.spec.base import OperationSpec

#: The connection type of a Spark Connect server (apache-airflow-providers-apache-spark's).
SPARK_CONNECT_CONN_TYPE = "spark_connect"


class DeltaInProcessHook(DeltaOperationMixin, BaseHook):
    """Run Delta operations in this process, over Spark Connect or with no Spark.

    :param conn_id: A ``spark_connect`` connection; None runs the operation
        with no Spark (only :data:`PYTHON_ENGINE_OPERATIONS`).
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the table store's
        credentials, used by this process only; None: each cloud's own chain.
    :param catalog_conn_id: The catalog that resolves a table named ``uc://``,
        ``glue://`` or ``hms://`` (:mod:`.delta_catalog`); None: the environment's.
    :param conf: Spark settings for the Connect session (runtime settings;
        the server refuses static ones, by name).
    :param package_cache_dir: Where the package zip the server's Python
        workers import is cached (default ``~/.cache/airflow-delta-provider``).
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_connect_default"
    conn_type = SPARK_CONNECT_CONN_TYPE
    hook_name = "Delta Lake over Spark Connect"

    def __init__(
        self,
        conn_id: str | None = None,
        *,
        storage_conn_id: str | None = None,
        catalog_conn_id: str | None = None,
        conf: Mapping[str, Any] | None = None,
        package_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__()
        self.conn_id = conn_id
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id
        self.conf = {str(k): str(v) for k, v in (conf or {}).items()}
        self._package_cache_dir = package_cache_dir
        self._command: Any = None

    def _remote_url(self) -> str:
        """The server's ``sc://`` URL, built by the Spark provider's own hook (it holds the token)."""
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        return SparkConnectHook(conn_id=self.conn_id).get_connection_url()  # type: ignore[arg-type]  # the provider types conn_id as str; ours may be None until a task sets it

    def _execute(
        self, operation: str, table: str, arguments: Sequence[str], token: str | None
    ) -> dict[str, Any] | None:
        """The argv form (``hook.run``): parsed into its spec, which runs as it is."""
        from airflow_delta_provider.operations.argv import parse_request

        argv = [operation, table, *arguments, *(["--token", token] if token else [])]
        return self._execute_spec(parse_request(argv))

    def _execute_spec(self, spec: OperationSpec) -> dict[str, Any] | None:
        from airflow_delta_provider.delta.errors import DeltaError
        from airflow_delta_provider.spark.in_process import InProcessCommand
        from airflow_delta_provider.spark.runtime.progress import Heartbeat, progress_interval

        operation, table = spec.operation, spec.table_path
        remote = None if self.conn_id is None else self._remote_url()
        where = "with no Spark" if remote is None else "over Spark Connect"
        heartbeat = Heartbeat(self.log.info, progress_interval())  # a line each interval of silence

        def report_progress(line: str) -> None:  # long jobs' progress lines, in the task log
            heartbeat.heard()
            self.log.info(line)

        try:
            self._command = InProcessCommand(
                spec,
                remote=remote,
                storage_options=self.storage_options or None,
                conf=self.conf,
                py_files=[] if remote is None else [str(build_package_zip(self._package_cache_dir))],
                report_progress=report_progress,
            )
            self.log.info("Running Delta %s on %s %s", operation, table, where)
            with heartbeat:
                return self._command.run()
        except DeltaError as exc:
            error = operation_error(exc, operation, self._named(table))
            raise error from (None if isinstance(error, AirflowFailException) else exc)
        finally:
            self._command = None

    def on_kill(self) -> None:
        """Interrupt the Spark Connect session's running operations; nothing uncommitted lands."""
        command = self._command
        if command is not None:
            self.log.info("Interrupting the Spark Connect session's operations")
            command.interrupt()


__all__ = ["PYTHON_ENGINE_OPERATIONS", "SPARK_CONNECT_CONN_TYPE", "DeltaInProcessHook"]
