"""What every way of running a Delta operation shares: the token, the result, the log.

An operation runs through spark-submit (:class:`~.delta_spark.DeltaSparkHook`)
or in the task's own process (:class:`~.delta_in_process.DeltaInProcessHook`:
Spark Connect, or no Spark at all). Either way:

* the result comes from ``_delta_log``: the commit that carries the caller's
  operation token (driver stdout never comes back in cluster deploy mode,
  the log always does);
* a retried task whose earlier try already committed gets that commit back,
  and nothing runs again.

:class:`DeltaOperationMixin` holds that skeleton; a hook supplies
:meth:`~DeltaOperationMixin._execute`. Neither pyspark nor pyarrow is
imported here; the Delta core is imported inside the methods that read the log.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypedDict

from airflow_delta_provider.delta.catalog.reference import is_catalog_reference
from airflow_delta_provider.operations.registry import OPERATIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from airflow_delta_provider.delta.actions.model import CommitInfo
    from airflow_delta_provider.delta.catalog.binding import CatalogTable
    from airflow_delta_provider.operations.spec.base import OperationSpec


#: How far the storage's clock may lag Airflow's when looking for an earlier try's commit.
CLOCK_SKEW = timedelta(hours=1)


class DeltaOperationResult(TypedDict):
    """What one operation returns (and what operators push to XCom)."""

    table: str
    #: The committed version; None when the operation changed nothing.
    version: int | None
    operation: str
    metrics: dict[str, Any]


def operation_token(dag_id: str, task_id: str, run_id: str, map_index: int | None = -1) -> str:
    """The token that names one task instance's change across its tries.

    The try number is left out on purpose: every try of a task instance
    carries the same token, so a retry can find what an earlier try committed.
    """
    return f"{dag_id}/{task_id}/{run_id}/{-1 if map_index is None else map_index}"


def parse_operation_token(token: str) -> tuple[str, str, str, int] | None:
    """(dag_id, task_id, run_id, map_index) of an :func:`operation_token`; None when
    ``token`` is not one. DAG and task ids hold no ``/``; a run id may."""
    dag_id, _, rest = token.partition("/")
    task_id, _, rest = rest.partition("/")
    run_id, _, map_index = rest.rpartition("/")
    if not (dag_id and task_id and run_id and re.fullmatch(r"-?\d+", map_index)):
        return None
    return dag_id, task_id, run_id, int(map_index)


def operation_metrics(raw: Any) -> dict[str, Any]:
    """operationMetrics as written (strings, delta-spark style), numbers made numbers."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            out[key] = int(value)
        else:
            out[key] = value
    return out


def is_permanent(error_name: str | None) -> bool:
    """Whether a retry could not help: bad input, a feature we refuse, or a
    table that is not there (a mistyped ``table_path`` is not retried; a
    sensor waits for a table only with ``wait_for_creation``)."""
    from airflow_delta_provider.delta import errors

    cls = getattr(errors, error_name or "", None)
    permanent = (errors.InvalidInputError, errors.UnsupportedFeatureError, errors.TableNotFoundError)
    return isinstance(cls, type) and issubclass(cls, permanent)


def task_error(exc: BaseException, message: str) -> Exception:
    """The Airflow error that fails a task for the core error ``exc``: without
    retries when it is permanent (:func:`is_permanent`), else with them."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    if is_permanent(type(exc).__name__):
        return AirflowFailException(message)
    return AirflowException(message)


def operation_error(exc: BaseException, operation: str, table: str) -> Exception:
    """The task's error for the core error ``exc`` of ``operation`` on ``table``: one line,
    ``Delta <operation> on <table> failed: <ClassName>: <message>``, as the Spark
    application reports it (:func:`task_error` decides whether a retry may help)."""
    from airflow_delta_provider.delta.errors import one_line

    return task_error(exc, f"Delta {operation} on {table} failed: {type(exc).__name__}: {one_line(exc)}")


class DeltaOperationMixin:
    """The run skeleton of a Delta hook: find an earlier try's commit, run, read the commit.

    A hook sets ``storage_conn_id`` and implements :meth:`_execute`.
    """

    storage_conn_id: str | None
    #: The connection of the catalog that resolves ``uc://``, ``glue://`` and ``hms://``
    #: names (:mod:`.delta_catalog`); None: the environment's settings.
    catalog_conn_id: str | None = None
    log: Any
    #: How the last run's result was found without running: ``"token"`` (an
    #: earlier try of the task instance committed it), ``"txn"`` (an earlier
    #: write of the same ``txn`` did), or None (this run committed it, or nothing).
    earlier_commit: str | None = None
    #: That earlier commit's time (ms since the epoch; its ``inCommitTimestamp``, else its
    #: ``commitInfo.timestamp``), read with the commit itself while the table's credentials were at hand.
    earlier_commit_at: int | None = None
    #: The catalog name being run, bound to its location (for the run's duration).
    _catalog: CatalogTable | None = None

    @cached_property
    def _connection_storage_options(self) -> dict[str, str]:
        from airflow_delta_provider.utils.storage_connection import storage_settings

        return storage_settings(self.storage_conn_id)

    @property
    def storage_options(self) -> dict[str, str]:
        """The store settings of ``storage_conn_id`` (empty without one), with the
        credentials the catalog vended for the table being run (renewed when they expire soon)."""
        base = self._connection_storage_options
        return base if self._catalog is None else self._catalog.storage_options(base)

    def _named(self, table: str) -> str:
        """``table`` as the user gave it, for an error: a catalog name being run is
        named, with its location after it (``uc://c.s.t (abfss://...)``)."""
        catalog = self._catalog
        if catalog is not None and table == catalog.location:
            return f"{catalog.ref} ({table})"
        return table

    def _delta_table(self, table: str) -> Any:
        from airflow_delta_provider.delta.table import DeltaTable

        return DeltaTable(table, self.storage_options or None)

    def run(
        self,
        operation: str,
        table: str,
        arguments: Sequence[str] = (),
        token: str | None = None,
        not_before: datetime | None = None,
    ) -> DeltaOperationResult:
        """Run ``operation`` on ``table`` and return the commit it made.

        :param operation: One of :data:`OPERATIONS`.
        :param table: The table's path or URI, as the engine sees it.
        :param arguments: The Spark CLI's options for this operation.
        :param token: Names this change across retries; when a commit with
            it exists already, that commit is returned and nothing runs.
        :param not_before: When the work this token names began (the DAG
            run's start): older commits cannot carry it, so they are not read.
        """
        if operation not in OPERATIONS:
            raise ValueError(f"unknown Delta operation {operation!r}; expected one of {OPERATIONS}")
        from airflow_delta_provider.delta.errors import InvalidInputError
        from airflow_delta_provider.operations.argv import parse_request

        try:
            spec = parse_request([operation, table, *arguments, *(["--token", token] if token else [])])
        except InvalidInputError as exc:
            raise operation_error(exc, operation, table) from None
        if is_catalog_reference(table):  # run as a spec on the name's location
            return self.run_spec(spec, not_before)
        return self._run_once(spec, not_before, lambda: self._execute(operation, table, arguments, token))

    def run_spec(self, spec: OperationSpec, not_before: datetime | None = None) -> DeltaOperationResult:
        """Run ``spec`` and return the commit it made, as :meth:`run` does.

        The spec's ``token`` names the change across retries. In the task's own
        process the spec object is passed as it is; only a spark-submit turns
        it into the application's argv.
        """
        if not is_catalog_reference(spec.table_path):
            return self._run_once(spec, not_before, lambda: self._execute_spec(spec))
        from airflow_delta_provider.delta.errors import DeltaError
        from airflow_delta_provider.hooks.delta_catalog import DeltaCatalogHook
        from airflow_delta_provider.operations.catalog import bind_spec

        try:
            bound, catalog = bind_spec(spec, DeltaCatalogHook(self.catalog_conn_id).settings())
        except DeltaError as exc:  # before anything ran: nothing written, nothing registered
            raise operation_error(exc, spec.operation, spec.table_path) from exc
        assert catalog is not None
        self.log.info("%s is the Delta table at %s", spec.table_path, catalog.location)
        # Bound once for the whole run: pre-flight, the engine and the result's read
        # all use this location and its vended credentials (:attr:`storage_options`).
        self._catalog = catalog
        catalog.lease()  # in this process, every store of the table renews them before expiry
        try:
            result = self._run_once(bound, not_before, lambda: self._execute_spec(bound))
            if not spec.reads_only:
                outcome = catalog.sync(self._connection_storage_options, warn=self.log.warning)
                self.log.info("Catalog entry of %s: %s", spec.table_path, outcome)
            return result
        finally:
            self._catalog = None
            catalog.close()

    def _run_once(
        self,
        spec: OperationSpec,
        not_before: datetime | None,
        execute: Callable[[], dict[str, Any] | None],
    ) -> DeltaOperationResult:
        """``execute`` unless an earlier try committed the spec's token, or the table
        has seen the spec's ``txn`` (then no engine starts); the commit it made.

        Before ``execute`` starts any engine, :meth:`preflight` checks the spec
        against the table's log, in this process."""
        operation, table, token, txn = spec.operation, spec.table_path, spec.token, spec.idempotent_txn()
        self.earlier_commit = self.earlier_commit_at = None
        before = -1
        if token:
            earlier = self._last_commit_with_token(table, token, not_before=not_before)
            if earlier is not None:
                version, info = earlier
                self.log.info(
                    "Version %s of %s already carries token %r (an earlier try committed it); not running again.",
                    version,
                    table,
                    token,
                )
                self._found_earlier("token", version, info)
                return self._commit_result(table, version, info)
            before = self._latest_version(table)
        if txn is not None and (seen := self._txn_result(table, txn)) is not None:
            return seen

        self.preflight(spec)
        printed = execute()

        if token:
            committed = self._last_commit_with_token(table, token, since_version=before + 1)
            if committed is not None:
                return self._commit_result(table, *committed)
            if txn is not None and (seen := self._txn_result(table, txn)) is not None:  # landed meanwhile
                return seen
            return self._uncommitted_result(operation, table, printed)
        return self._printed_result(operation, table, printed)

    def preflight(self, spec: OperationSpec) -> None:
        """Check ``spec`` from the table's log alone, before any engine starts
        (:mod:`airflow_delta_provider.operations.preflight`): a mistyped table,
        column or source fails here in a second, with the error Spark would give
        after its start. Raises the task's error (:func:`operation_error`)."""
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_delta_provider.delta.errors import DeltaError
        from airflow_delta_provider.operations.runners.preflight import preflight

        try:
            preflight(spec, self.storage_options or None)
        except DeltaError as exc:
            error = operation_error(exc, spec.operation, self._named(spec.table_path))
            raise error from (None if isinstance(error, AirflowFailException) else exc)

    def _txn_result(self, table: str, txn: tuple[str, int]) -> DeltaOperationResult | None:
        """The commit of an earlier write of ``txn``, when the table has seen it.

        delta-spark skips such a write silently; a rerun or a backfill of an
        interval is what Airflow users do daily, and what they expect back is
        the version that holds the interval's data, so that a downstream
        sensor or reader finds it."""
        delta_table = self._delta_table(table)
        if not delta_table.exists():
            return None
        app_id, version = txn
        found = delta_table.find_txn_commit(app_id, version)
        if found is None:  # not seen (or its commit is gone): the engine writes, or skips with no version
            return None
        committed, info = found
        self.log.info(
            "Version %s of %s recorded txn %s of %r (an earlier write of it); nothing to write again.",
            committed,
            table,
            version,
            app_id,
        )
        self._found_earlier("txn", committed, info)
        if info is None:
            return DeltaOperationResult(table=table, version=committed, operation="", metrics={})
        return self._commit_result(table, committed, info)

    def _found_earlier(self, how: str, version: int, info: CommitInfo | None) -> None:
        from airflow_delta_provider.delta.log.commit_summary import version_info

        self.earlier_commit = how
        self.earlier_commit_at = None if info is None else version_info(version, info.raw).timestamp

    def _execute(
        self, operation: str, table: str, arguments: Sequence[str], token: str | None
    ) -> dict[str, Any] | None:
        """Run the operation; the result the engine printed, when it came back."""
        raise NotImplementedError

    def _execute_spec(self, spec: OperationSpec) -> dict[str, Any] | None:
        """Run ``spec``: by default as the application's argv (a spark-submit's boundary)."""
        return self._execute(spec.operation, spec.table_path, spec.arguments(), spec.token)

    # --- Reading the result from the log ---------------------------------------

    def _latest_version(self, table: str) -> int:
        delta_table = self._delta_table(table)
        return delta_table.latest_version() if delta_table.exists() else -1

    def _last_commit_with_token(
        self, table: str, token: str, since_version: int = 0, not_before: datetime | None = None
    ) -> tuple[int, CommitInfo] | None:
        """The newest commit carrying ``token``, or None."""
        delta_table = self._delta_table(table)
        if not delta_table.exists():
            return None
        not_before_ms = None
        if not_before is not None:
            # Commits are stamped by the storage's clock: allow for skew.
            not_before_ms = int((not_before - CLOCK_SKEW).timestamp() * 1000)
        return delta_table.find_commit(token, since_version, not_before_ms=not_before_ms)

    @staticmethod
    def _commit_result(table: str, version: int, info: CommitInfo) -> DeltaOperationResult:
        return DeltaOperationResult(
            table=table,
            version=version,
            operation=info.operation or "",
            metrics=operation_metrics(info.raw.get("operationMetrics")),
        )

    def _uncommitted_result(self, operation: str, table: str, printed: dict[str, Any] | None) -> DeltaOperationResult:
        """The result when no commit carries the token: nothing changed.

        The printed result fills in what it can (it is lost in cluster deploy
        mode). A checkpoint commits nothing by nature; its version is the
        checkpointed one, read from ``_last_checkpoint`` when nothing was printed.
        Nor does reading changes; its version is the last one read. Nor does
        generating manifests; its version is the one they reflect.
        """
        result = self._printed_result(operation, table, printed)
        if operation in ("changes", "generate", "register"):  # commit nothing by nature: the version read
            return result
        if operation != "checkpoint":
            result["version"] = None
        elif result["version"] is None:
            result["version"] = self._last_checkpoint_version(table)
        return result

    @staticmethod
    def _printed_result(operation: str, table: str, printed: dict[str, Any] | None) -> DeltaOperationResult:
        """The result as the engine printed it (empty when it did not come back)."""
        printed = printed or {}
        return DeltaOperationResult(
            table=table,
            version=printed.get("version"),
            operation=str(printed.get("operation") or operation.upper()),
            metrics=operation_metrics(printed.get("metrics")),
        )

    def _last_checkpoint_version(self, table: str) -> int | None:
        last = self._delta_table(table).log_store.read_last_checkpoint()
        return None if last is None else last.get("version")


__all__ = [
    "CLOCK_SKEW",
    "OPERATIONS",
    "DeltaOperationMixin",
    "DeltaOperationResult",
    "is_permanent",
    "operation_error",
    "operation_metrics",
    "operation_token",
    "parse_operation_token",
]
