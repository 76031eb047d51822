"""A sensor that waits for a new version of a Delta table.

It reads ``_delta_log`` directly through the core (no Spark, no JVM), and a
poke costs a fixed number of log-store calls however long the log is: see
:class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

from airflow_delta_provider.triggers.delta_table import (
    DeltaTableVersionTrigger,
    missing_table_message,
    open_probe,
    poll_once,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_delta_provider.delta.log.version_probe import VersionProbe

#: Where a reschedule-mode sensor keeps the baseline it captured, across pokes.
BASELINE_STATE_KEY = "delta_baseline_version"


class DeltaTableVersionSensor(BaseSensorOperator):
    """Wait until a Delta table has a version newer than ``after_version``.

    The sensor succeeds with the table's **latest** version at the moment it
    sees a change, as Databricks' ``DatabricksDeltaTableVersionSensor`` does
    with ``DESCRIBE HISTORY ... LIMIT 1``: a downstream task that reads
    ``VERSION AS OF`` that version sees every change up to the moment of the
    check, and the next run's ``after_version`` skips what was already seen.
    Every version in between is in the table's history for tasks that need
    them one by one (or use
    :class:`~airflow_delta_provider.triggers.delta_table.DeltaTableEventTrigger`,
    which fires once per version).

    The return value (XCom ``return_value``) is ``{"version",
    "baseline_version", "table", "timestamp", "operation"}``, where
    ``timestamp`` (milliseconds since the epoch) and ``operation`` come from
    that version's ``commitInfo``. The same dict is set as the ``extra`` of the
    task's outlet asset events, when it has outlets.

    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://``/``az://`` or ``gs://`` URI. Templated.
    :param after_version: Wait for a version greater than this one. Templated,
        so it can come from an XCom, e.g. ``"{{ ti.xcom_pull('update')['version'] }}"``.
        -1 waits for any version, that is for the table to exist. When absent,
        the baseline is the latest version at the first poke.
    :param wait_for_creation: Keep waiting while the table does not exist,
        instead of failing at once with ``TableNotFoundError``.
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the store's credentials;
        None uses each cloud's own chain. A deferred trigger carries the id only.
    :param deferrable: Wait in the triggerer with
        :class:`~airflow_delta_provider.triggers.delta_table.DeltaTableVersionTrigger`,
        freeing the worker slot. Defaults to ``[operators] default_deferrable``.
    """

    template_fields: Sequence[str] = ("table_path", "after_version")
    ui_color = "#00add4"

    def __init__(
        self,
        *,
        table_path: str,
        after_version: int | str | None = None,
        wait_for_creation: bool = False,
        storage_conn_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_path = table_path
        self.storage_conn_id = storage_conn_id
        self.after_version = after_version
        self.wait_for_creation = wait_for_creation
        self.deferrable = deferrable
        self._baseline: int | None = None
        self._table_seen = False
        # The version the sensor succeeded with, for get_openlineage_facets_on_complete.
        self._seen_version: int | None = None

    # --- poke ----------------------------------------------------------------

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_delta_provider.utils.storage_connection import storage_settings

        probe = open_probe(self.table_path, storage_settings(self.storage_conn_id))
        if self._baseline is None:
            self._baseline, is_latest = self._initial_baseline(probe, context)
            if is_latest:
                # The baseline was just read as the latest version.
                return PokeReturnValue(is_done=False)
        info, self._table_seen = poll_once(
            probe,
            self._baseline,
            table_seen=self._table_seen,
            wait_for_creation=self.wait_for_creation,
        )
        if info is None:
            self.log.info("No version of %s after %s yet", self.table_path, self._baseline)
            return PokeReturnValue(is_done=False)
        self.log.info("%s has version %s (after %s)", self.table_path, info.version, self._baseline)
        result = {**info.to_dict(), "baseline_version": self._baseline, "table": self.table_path}
        self._seen_version = info.version
        self._set_outlet_extra(context, result)
        return PokeReturnValue(is_done=True, xcom_value=result)

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
                from airflow_delta_provider.delta.errors import TableNotFoundError

                raise TableNotFoundError(missing_table_message(self.table_path))
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
        # a missing table, and skips the triggerer when the answer is ready.
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        assert self._baseline is not None  # set by poke
        self.defer(
            trigger=DeltaTableVersionTrigger(
                table_path=self.table_path,
                after_version=self._baseline,
                poll_interval=self.poke_interval,
                wait_for_creation=self.wait_for_creation,
                storage_conn_id=self.storage_conn_id,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: return its result or raise its error."""
        if event.get("status") != "success":
            raise _trigger_error(event)
        result = {k: v for k, v in event.items() if k != "status"}
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


def _trigger_error(event: dict[str, Any]) -> Exception:
    """The exception a trigger error event stands for: a typed DeltaError when it names one."""
    from airflow.sdk.exceptions import AirflowException

    from airflow_delta_provider.delta import errors

    message = event.get("message") or f"DeltaTableVersionTrigger failed: {event!r}"
    cls = getattr(errors, str(event.get("error_type")), None)
    if isinstance(cls, type) and issubclass(cls, errors.DeltaError):
        return cls(message)
    return AirflowException(message)
