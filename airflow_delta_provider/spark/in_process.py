"""Run one Spark CLI command inside the calling process.

spark-submit runs the CLI (:mod:`.cli`) in a driver of its own. Two modes run
the very same commands, with the same arguments, in the caller's process
instead (an Airflow task's):

- **Spark Connect** (``remote="sc://host:port"``): the commands are a client
  of a Spark Connect server, which runs the Spark jobs; the core reads the
  log and commits from this process. No JVM starts here, and nothing Connect
  lacks is used: no SparkContext, no RDD, no py4j.
- **No Spark** (``remote=None``), for the commands that need none
  (:data:`~airflow_delta_provider.operations.registry.PYTHON_ENGINE_OPERATIONS`: CHECKPOINT, ALTER, RESTORE and VACUUM):
  the core alone. They open no Connect session either.

:class:`InProcessCommand` returns what the CLI would print, as a dict, and
raises what the CLI would report: a
:class:`~airflow_delta_provider.delta.errors.DeltaError` (bad input as
InvalidInputError, a server gone as EngineUnavailableError), or anything
else for a crash. :meth:`InProcessCommand.interrupt` (another thread) stops
the session's Spark operations; what was not committed stays uncommitted.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_delta_provider.delta.errors import (
    DeltaError,
    EngineUnavailableError,
    InvalidInputError,
    OperationInterruptedError,
)
from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.spark.cli import execute, parse_request
from airflow_delta_provider.spark.runtime.progress import Report


class InProcessCommand:
    """One Spark CLI command, run in this process (see the module docs).

    :param argv: The operation's spec, as it is; or the CLI's arguments (the
        command, the table, its options), which are parsed into it.
    :param remote: A Spark Connect URL (``sc://host:port/;token=...``);
        None runs a command that needs no Spark.
    :param storage_options: The table store's settings for this process
        (the core's reads and commits); None: the environment.
    :param conf: Spark settings for the Connect session (runtime ones only).
    :param py_files: Zips or ``.py`` files the server's Python workers need
        (the package's own zip, as spark-submit's ``--py-files``).
    :param report_progress: Receives a progress line now and then while a
        long Spark job runs (:mod:`.runtime.progress`), e.g. a logger's
        ``info``; None: no lines.
    """

    def __init__(
        self,
        argv: OperationSpec | Sequence[str],
        *,
        remote: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        conf: Mapping[str, str] | None = None,
        py_files: Iterable[str] = (),
        report_progress: Report | None = None,
    ) -> None:
        self.request = argv if isinstance(argv, OperationSpec) else parse_request(argv)
        operation = self.request.operation
        adds_constraint = operation == "alter" and self.request.needs_spark()
        if remote is None and adds_constraint:
            raise InvalidInputError(
                "this ALTER needs Spark, not engine=python: adding a CHECK constraint checks the table's rows, "
                "and dropping deletionVectors or typeWidening rewrites data files"
            )
        if remote is None and not self.request.runs_without_spark:
            runnable = ", ".join(sorted(PYTHON_ENGINE_OPERATIONS))
            raise InvalidInputError(
                f"{operation} needs Spark: give a Spark Connect server, or use spark-submit "
                f"(only {runnable} run without Spark)"
            )
        # A command that needs no Spark opens no session, over Connect too
        # (VACUUM runs in this process; ALTER needs one to add a CHECK constraint).
        uses_spark = not self.request.runs_without_spark or adds_constraint
        self.remote = remote if uses_spark else None
        self.storage_options = dict(storage_options) if storage_options else None
        self.conf = {**dict(self.request.spark_conf), **dict(conf or {})}
        self.py_files = list(py_files)
        self.report_progress = report_progress
        # Reentrant: Airflow calls on_kill from a signal handler, on the thread that runs the command.
        self._lock = threading.RLock()
        self._session: Any = None
        self._interrupted = False

    def run(self) -> dict[str, Any]:
        """Run the command; the result the CLI would print, as a dict."""
        if self.remote is None:
            return execute(self.request, None, self.storage_options).to_dict()
        from airflow_delta_provider.spark.runtime.remote_session import connect_mode

        with connect_mode():
            return self._run_remote(self.remote)

    def _run_remote(self, remote: str) -> dict[str, Any]:
        from airflow_delta_provider.spark.runtime.remote_session import close, connect_session, unreachable_reason

        session = connect_session(remote, self.conf, self.py_files)
        with self._lock:
            self._session = session
            interrupted = self._interrupted
        try:
            if interrupted:
                raise OperationInterruptedError(f"the {self.request.operation} was interrupted before it started")
            return execute(self.request, session, self.storage_options, self.report_progress).to_dict()
        except DeltaError:
            raise
        except Exception as exc:
            if self._interrupted:
                raise OperationInterruptedError(
                    f"the {self.request.operation} was interrupted before it committed"
                ) from exc
            lost = unreachable_reason(exc)
            if lost is None:
                raise
            raise EngineUnavailableError(
                f"the Spark Connect server went away during the {self.request.operation}: {lost}"
            ) from exc
        finally:
            with self._lock:
                self._session = None
            close(session)

    def interrupt(self) -> None:
        """Stop the command: its running Spark operations are interrupted and
        its session is released, so no later Spark operation starts either.
        Safe from another thread and from a signal handler."""
        from airflow_delta_provider.spark.runtime.remote_session import close

        with self._lock:
            self._interrupted = True
            session = self._session
        if session is not None:
            with contextlib.suppress(Exception):
                session.interruptAll()
            close(session)


__all__ = ["InProcessCommand"]
