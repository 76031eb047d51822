"""Sensors that wait for a Delta table: a new version, or a partition's data.

They read ``_delta_log`` directly through the core (no Spark, no JVM), and a
poke costs a fixed number of log-store calls however long the log is, plus
one read of each commit that is new since the last poke: see
:class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe` and
:mod:`airflow_delta_provider.delta.watch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

from airflow_delta_provider.triggers.delta_table import (
    DeltaPartitionTrigger,
    DeltaTableVersionTrigger,
    Partition,
    fired_result,
    missing_table_message,
    open_probe,
    open_watch,
    poll_once,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_delta_provider.delta.log.version_probe import VersionProbe
    from airflow_delta_provider.delta.watch.commit_watch import CommitWatch
    from airflow_delta_provider.delta.watch.outage import Outage
    from airflow_delta_provider.delta.watch.partition_watch import PartitionWatch

#: Where a reschedule-mode sensor keeps the baseline it captured, across pokes.
BASELINE_STATE_KEY = "delta_baseline_version"
#: ... the last version it has read, and the versions its filters skipped.
CURSOR_STATE_KEY = "delta_cursor_version"
SKIPPED_STATE_KEY = "delta_skipped_versions"


class _PollsThroughOutages(BaseSensorOperator):
    """A sensor whose pokes poll through store outages: the first failed poke
    of an outage logs one warning, the next ones none, and the first poke that
    answers again logs one line (:class:`~airflow_delta_provider.delta.watch.outage.Outage`);
    a failed poke moves no cursor, so no version is skipped. Refused
    credentials or a missing bucket still fail the sensor at once. The record
    is kept on the sensor object: a reschedule-mode sensor, a new object at
    each poke, warns at each failed poke."""

    table_path: str
    _outage: Outage | None = None

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_delta_provider.delta.watch.outage import Outage

        if self._outage is None:
            self._outage = Outage(self.log, self.table_path)
        with self._outage.polling():
            return self._poke(context)
        return PokeReturnValue(is_done=False)

    def _poke(self, context: Context) -> PokeReturnValue:
        raise NotImplementedError


class DeltaTableVersionSensor(_PollsThroughOutages):
    """Wait until a Delta table has a version newer than ``after_version`` that
    changes data (or passes the filters given).

    By default only commits that add or remove rows count (see
    :class:`~airflow_delta_provider.delta.watch.commit_filter.CommitFilter`):
    OPTIMIZE, both commits of a VACUUM, REORG ... PURGE and metadata-only
    commits change no row, and a downstream DAG has nothing new to read after
    them. ``data_changes_only=False`` counts every commit, as earlier releases did.

    The sensor succeeds with the **newest** version that passed, among the
    versions committed up to the moment of the check, as Databricks'
    ``DatabricksDeltaTableVersionSensor`` does with ``DESCRIBE HISTORY ...
    LIMIT 1``: a downstream task that reads ``VERSION AS OF`` that version sees
    every change up to it, and the next run's ``after_version`` skips what was
    already seen.

    The return value (XCom ``return_value``) is ``{"version", "timestamp",
    "operation", "versions", "skipped_versions", "baseline_version",
    "table"}``: ``timestamp`` (milliseconds since the epoch) and
    ``operation`` come from that version's ``commitInfo``; ``versions`` lists
    every version since the baseline that passed the filters and
    ``skipped_versions`` those that did not. The same dict is set as the
    ``extra`` of the task's outlet asset events, when it has outlets.

    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://``/``az://`` or ``gs://`` URI, or its name in a catalog
        (``uc://``, ``glue://``, ``hms://``; ``docs/catalogs.rst``). Templated.
    :param after_version: Wait for a version greater than this one. Templated,
        so it can come from an XCom, e.g. ``"{{ ti.xcom_pull('update')['version'] }}"``.
        -1 waits for any version, that is for the table to exist (and, with
        ``data_changes_only``, to hold data). When absent, the baseline is the
        latest version at the first poke.
    :param wait_for_creation: Keep waiting while the table does not exist,
        instead of failing at once with ``TableNotFoundError``.
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the store's credentials;
        None uses each cloud's own chain. A deferred trigger carries the id only.
    :param catalog_conn_id: The catalog of a table named ``uc://``, ``glue://``
        or ``hms://`` (None: the environment's). A deferred trigger carries the
        name and this id only, and resolves them when it runs.
    :param data_changes_only: Count only commits that add or remove rows
        (``dataChange`` files, or change-data files). Default True.
    :param operations: Count only commits whose ``commitInfo.operation`` is one
        of these, e.g. ``["WRITE", "MERGE"]``. Templated.
    :param partition: Count only commits that add or remove files of a
        matching partition: a mapping of partition values such as
        ``{"ds": "{{ ds }}"}``, or a SQL predicate over partition columns.
        Templated.
    :param deferrable: Wait in the triggerer with
        :class:`~airflow_delta_provider.triggers.delta_table.DeltaTableVersionTrigger`,
        freeing the worker slot. Defaults to ``[operators] default_deferrable``.
    """

    template_fields: Sequence[str] = ("table_path", "after_version", "operations", "partition")
    ui_color = "#00add4"

    def __init__(
        self,
        *,
        table_path: str,
        after_version: int | str | None = None,
        wait_for_creation: bool = False,
        storage_conn_id: str | None = None,
        catalog_conn_id: str | None = None,
        data_changes_only: bool = True,
        operations: list[str] | None = None,
        partition: Partition | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_path = table_path
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id
        self.after_version = after_version
        # Given (a template, an XComArg): rendered empty, it means "the upstream committed nothing new".
        self._after_version_given = after_version is not None
        self.wait_for_creation = wait_for_creation
        self.data_changes_only = data_changes_only
        self.operations = operations
        self.partition = partition
        self.deferrable = deferrable
        self._baseline: int | None = None
        self._probe: VersionProbe | None = None
        self._watch: CommitWatch | None = None
        self._table_seen = False
        # The version the sensor succeeded with, for get_openlineage_facets_on_complete.
        self._seen_version: int | None = None

    # --- poke ----------------------------------------------------------------

    def _poke(self, context: Context) -> PokeReturnValue:
        from airflow_delta_provider.utils.storage_connection import storage_settings

        if self._probe is None:  # once per sensor object: its watch keeps polling through it
            self._probe = open_probe(self.table_path, storage_settings(self.storage_conn_id), self.catalog_conn_id)
        probe = self._probe
        if self._baseline is None:
            if self._after_version_given and _absent(self.after_version):
                return self._nothing_to_wait_for(probe, context)
            self._baseline, is_latest = self._initial_baseline(probe, context)
            if is_latest:
                # The baseline was just read as the latest version.
                return PokeReturnValue(is_done=False)
        watch = self._watch or self._open_watch(probe, context)
        from airflow_delta_provider.delta.errors import TableNotFoundError

        try:
            fired, self._table_seen = poll_once(
                watch, table_seen=self._table_seen, wait_for_creation=self.wait_for_creation
            )
        except TableNotFoundError:
            raise _missing_table(self.table_path) from None
        if fired is None:
            self._store_progress(context, watch)
            if watch.skipped:
                self.log.info(
                    "No version of %s after %s passes the filters yet (read up to %s, skipped %s)",
                    self.table_path,
                    self._baseline,
                    watch.cursor,
                    len(watch.skipped),
                )
            else:
                self.log.info("No version of %s after %s yet", self.table_path, self._baseline)
            return PokeReturnValue(is_done=False)
        self.log.info("%s has version %s (after %s)", self.table_path, fired.last.version, self._baseline)
        result = fired_result(fired, self._baseline, self.table_path)
        self._seen_version = fired.last.version
        self._set_outlet_extra(context, result)
        return PokeReturnValue(is_done=True, xcom_value=result)

    def _nothing_to_wait_for(self, probe: VersionProbe, context: Context) -> PokeReturnValue:
        """``after_version`` was given and rendered empty: the upstream task
        committed nothing new (nothing matched, nothing to do). No commit is
        owed, so the sensor succeeds at once with the table's latest version,
        instead of waiting for a commit that a rerun never makes."""
        latest = probe.latest()
        if latest is None:
            if not self.wait_for_creation:
                raise _missing_table(self.table_path)
            self._baseline = -1  # the table's creation is then the change waited for
            self.log.info("%s does not exist yet; waiting for it", self.table_path)
            return PokeReturnValue(is_done=False)
        self.log.info(
            "after_version of %s rendered %r: the upstream committed nothing new, so nothing to wait for; "
            "succeeding with its latest version, %s",
            self.table_path,
            self.after_version,
            latest,
        )
        result = {
            **probe.info(latest).to_dict(),
            "versions": [],
            "skipped_versions": [],
            "baseline_version": latest,
            "table": self.table_path,
        }
        self._seen_version = latest
        self._set_outlet_extra(context, result)
        return PokeReturnValue(is_done=True, xcom_value=result)

    def _open_watch(self, probe: VersionProbe, context: Context) -> CommitWatch:
        """The watch from the baseline, or from where an earlier poke of a
        reschedule-mode sensor stopped."""
        assert self._baseline is not None
        cursor, skipped = self._baseline, []
        if self.reschedule and "task_state_store" in context:
            store = context["task_state_store"]
            stored_cursor = store.get(CURSOR_STATE_KEY)
            if stored_cursor is not None:
                cursor = int(stored_cursor)
                skipped = [int(v) for v in store.get(SKIPPED_STATE_KEY) or []]
        self._watch = open_watch(
            probe,
            cursor,
            data_changes_only=self.data_changes_only,
            operations=self.operations,
            partition=self.partition,
            skipped=skipped,
        )
        return self._watch

    def _store_progress(self, context: Context, watch: CommitWatch) -> None:
        if self.reschedule and "task_state_store" in context and watch.cursor != self._baseline:
            context["task_state_store"].set(CURSOR_STATE_KEY, watch.cursor)
            context["task_state_store"].set(SKIPPED_STATE_KEY, list(watch.skipped))

    def _initial_baseline(self, probe: VersionProbe, context: Context) -> tuple[int, bool]:
        """The baseline, and whether it was just read as the latest version."""
        if not _absent(self.after_version):
            return _parse_version(self.after_version), False
        stored = self._stored_baseline(context)
        if stored is not None:
            return stored, False
        latest = probe.latest()
        if latest is None:
            if not self.wait_for_creation:
                raise _missing_table(self.table_path)
            # The table's creation is then the change waited for.
            self.log.info("%s does not exist yet; waiting for it", self.table_path)
            self._store_baseline(context, -1)
            return -1, False
        self._table_seen = True
        self.log.info("Baseline of %s is its latest version, %s", self.table_path, latest)
        self._store_baseline(context, latest)
        return latest, True

    # A reschedule-mode sensor is a new object at each poke; the baseline it
    # captured survives in the task state store, scoped to this task instance.
    def _stored_baseline(self, context: Context) -> int | None:
        if not self.reschedule or "task_state_store" not in context:
            return None
        value = context["task_state_store"].get(BASELINE_STATE_KEY)
        if value is None:
            return None
        self._table_seen = True
        return int(value)

    def _store_baseline(self, context: Context, version: int) -> None:
        if self.reschedule and "task_state_store" in context:
            context["task_state_store"].set(BASELINE_STATE_KEY, version)

    def _set_outlet_extra(self, context: Context, result: dict[str, Any]) -> None:
        from airflow_delta_provider.assets.events import drop_table_outlets
        from airflow_delta_provider.assets.uri import table_asset_uri
        from airflow_delta_provider.utils.storage_connection import storage_settings

        # The table's own asset has its event for this version already (from its writer or watcher).
        dropped = drop_table_outlets(self, table_asset_uri(self.table_path, storage_settings(self.storage_conn_id)))
        if dropped:
            self.log.info("No event on %s: the table's asset has one per version already", dropped[0].uri)
        outlet_events = context.get("outlet_events")
        if outlet_events is None:
            return
        for outlet in self.outlets:
            outlet_events[outlet].extra = dict(result)

    # --- deferrable ------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        # One synchronous poke first: it captures the baseline, fails fast on
        # a missing table or a failing store (the task's retries wait for
        # it), and skips the triggerer when the answer is ready.
        first = self._poke(context)
        if first.is_done:
            return first.xcom_value
        assert self._baseline is not None  # set by poke
        watch = self._watch
        self.defer(
            trigger=DeltaTableVersionTrigger(
                table_path=self.table_path,
                after_version=watch.cursor if watch else self._baseline,
                baseline_version=self._baseline,
                skipped_versions=list(watch.skipped) if watch else None,
                poll_interval=self.poke_interval,
                wait_for_creation=self.wait_for_creation,
                storage_conn_id=self.storage_conn_id,
                catalog_conn_id=self.catalog_conn_id,
                data_changes_only=self.data_changes_only,
                operations=self.operations,
                partition=self.partition,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: return its result or raise its error."""
        result = _event_result(event)
        self.log.info("%s has version %s", self.table_path, result["version"])
        self._seen_version = result["version"]
        self._set_outlet_extra(context, result)
        return result

    # --- OpenLineage (docs/lineage.rst); None without the [openlineage] extra ---

    def get_openlineage_facets_on_start(self) -> Any:
        """The watched table as the input, by name only."""
        return self._openlineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The watched table as the input, at the version the sensor succeeded with."""
        return self._openlineage(self._seen_version)

    def _openlineage(self, version: int | None) -> Any:
        from airflow_delta_provider.lineage.build import sensor_lineage  # imports no OpenLineage itself
        from airflow_delta_provider.utils.storage_connection import storage_settings

        return sensor_lineage(self.table_path, version, lambda: storage_settings(self.storage_conn_id))


class DeltaPartitionSensor(_PollsThroughOutages):
    """Wait until a partition of a Delta table holds live data.

    As Databricks' ``DatabricksPartitionSensor``, and answered from the log
    alone, with no JVM: the first poke reads the snapshot and keeps the
    partition's live files, later pokes read only the new commits (see
    :class:`~airflow_delta_provider.delta.watch.partition_watch.PartitionWatch`).
    A reschedule-mode sensor is a new object at each poke, so each of its
    pokes reads the snapshot again; prefer ``poke`` mode or ``deferrable``.

    The return value is ``{"version", "num_files", "num_records",
    "partition", "table"}``: the version at which the sensor saw the
    partition ready (at the first poke, the latest version then; after it,
    the first new version that made it ready), with the partition's live
    files and rows at that version.

    :param table_path: The table root: a path or a URI. Templated.
    :param partition: The partition: a mapping of partition values such as
        ``{"ds": "{{ ds }}"}``, or a SQL predicate over partition columns.
        Templated.
    :param min_records: Also wait until the partition holds at least this
        many rows, counted from the files' ``numRecords`` stats minus the rows
        their deletion vectors hide. Templated.
    :param wait_for_creation: Keep waiting while the table does not exist.
    :param storage_conn_id: The store's connection (None: the cloud's own chain).
    :param catalog_conn_id: The catalog of a table named ``uc://``, ``glue://``
        or ``hms://`` (None: the environment's).
    :param deferrable: Wait in the triggerer with
        :class:`~airflow_delta_provider.triggers.delta_table.DeltaPartitionTrigger`.
    """

    template_fields: Sequence[str] = ("table_path", "partition", "min_records")
    ui_color = "#00add4"

    def __init__(
        self,
        *,
        table_path: str,
        partition: Partition,
        min_records: int | str | None = None,
        wait_for_creation: bool = False,
        storage_conn_id: str | None = None,
        catalog_conn_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_path = table_path
        self.partition = partition
        self.min_records = min_records
        self.wait_for_creation = wait_for_creation
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id
        self.deferrable = deferrable
        self._watch: PartitionWatch | None = None

    def _poke(self, context: Context) -> PokeReturnValue:
        from airflow_delta_provider.delta.watch.partition_watch import PartitionWatch
        from airflow_delta_provider.utils.storage_connection import storage_settings

        if self._watch is None:
            probe = open_probe(self.table_path, storage_settings(self.storage_conn_id), self.catalog_conn_id)
            self._watch = PartitionWatch(probe, self.partition, _parse_min_records(self.min_records))
        state = self._watch.poll()
        if state is not None:
            result = {**state.to_dict(), "partition": self.partition, "table": self.table_path}
            self.log.info(
                "Partition %s of %s is ready at version %s: %s files, %s rows",
                self.partition,
                self.table_path,
                state.version,
                state.num_files,
                state.num_records,
            )
            return PokeReturnValue(is_done=True, xcom_value=result)
        if self._watch.version is None:
            if not self.wait_for_creation:
                raise _missing_table(self.table_path)
            self.log.info("%s does not exist yet; waiting for it", self.table_path)
        else:
            current = self._watch.state
            self.log.info(
                "Partition %s of %s is not ready at version %s (%s files, %s rows)",
                self.partition,
                self.table_path,
                self._watch.version,
                current.num_files if current else 0,
                current.num_records if current else 0,
            )
        return PokeReturnValue(is_done=False)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self._poke(context)  # fails fast on a bad partition, a missing table or a failing store
        if first.is_done:
            return first.xcom_value
        self.defer(
            trigger=DeltaPartitionTrigger(
                table_path=self.table_path,
                partition=self.partition,
                min_records=_parse_min_records(self.min_records),
                poll_interval=self.poke_interval,
                wait_for_creation=self.wait_for_creation,
                storage_conn_id=self.storage_conn_id,
                catalog_conn_id=self.catalog_conn_id,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: return its result or raise its error."""
        result = _event_result(event)
        self.log.info("Partition %s of %s is ready at version %s", self.partition, self.table_path, result["version"])
        return result


def _parse_min_records(value: int | str | None) -> int | None:
    """``min_records`` as an int; a template that rendered nothing means none."""
    from airflow_delta_provider.delta.watch.partition_watch import parse_min_records

    return None if _absent(value) else parse_min_records(value)


def _absent(value: int | str | None) -> bool:
    """Whether ``after_version`` is unset. A template pulling the XCom of an
    operator that changed nothing renders ``None`` as the string "None"."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None", "null"))


def _parse_version(value: int | str) -> int:
    """``after_version`` as an int; templated values arrive as strings."""
    from airflow_delta_provider.delta.errors import InvalidInputError

    try:
        version = int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"after_version must be an integer, got {value!r}") from None
    if version < -1:
        raise InvalidInputError(f"after_version must be -1 or more, got {version}")
    return version


def _event_result(event: dict[str, Any]) -> dict[str, Any]:
    """A trigger event's result without its status; raises the error it reports."""
    if event.get("status") != "success":
        raise _trigger_error(event)
    return {k: v for k, v in event.items() if k != "status"}


def _missing_table(table_path: str) -> Exception:
    """A missing table without ``wait_for_creation``: the task fails for good (no retry creates it)."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_delta_provider.delta.errors import TableNotFoundError

    return AirflowFailException(f"{TableNotFoundError.__name__}: {missing_table_message(table_path)}")


def _trigger_error(event: dict[str, Any]) -> Exception:
    """The exception a trigger error event stands for: a typed DeltaError when it
    names one, or a failure without retries when no retry could help."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from airflow_delta_provider.delta import errors
    from airflow_delta_provider.hooks.delta_operation import is_permanent

    message = event.get("message") or f"the trigger failed: {event!r}"
    name = str(event.get("error_type"))
    if is_permanent(name):
        return AirflowFailException(f"{name}: {message}")
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, errors.DeltaError):
        return cls(message)
    return AirflowException(message)
