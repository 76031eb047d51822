"""The versions an asset-scheduled consumer of a Delta table has to process.

Asset events wake a consumer; they do not tell it what to process. On
Airflow 3.3 a run takes the asset events up to its queue row's
``created_at``, and an event that lands while that row waits is linked to no
run (apache/airflow#56050, fixed by apache/airflow#70972 for Airflow 3.4).
An operator can also delete an event, and a run can be cleared. So a
consumer that processes "the versions its events name" skips data. Instead:

- :func:`version_range` reads the table's newest version from ``_delta_log``
  (through the core's
  :class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe`, no
  JVM) and returns the range from just after the last version the consumer
  processed up to it: the versions of events that reached no run are in it,
  and with nothing new it returns None;
- :func:`processed_version` and :func:`record_processed` keep that last
  version in the **asset's state store**, under one key per consumer, and
  the consumer records a range only after it processed it.

Why the asset state store (Airflow 3.3's per-asset store, the one
:class:`~airflow_delta_provider.triggers.delta_table.DeltaTableEventTrigger`
keeps its watermark in):

- it is read when the run starts, not carried by an event, so a dropped or
  deleted event loses nothing;
- it only moves forward, so a cleared (re-run) old run reads where the
  consumer is now and gets only unprocessed versions, or nothing; the
  consumer's own XCom of its previous run would hand a cleared run an old
  start again (and clearing deletes that run's XCom);
- it belongs to the asset: it is found by the asset, shows in the asset's
  REST API with the task that wrote it, and is removed when no DAG uses the
  asset any more; an Airflow Variable works the same way (any object with
  ``get(key)`` and ``set(key, value)`` does) but is one global name among all.

No store makes two concurrent runs safe: both would read the same last
version. Give the consumer ``max_active_runs=1``: runs then start one after
the other, each reads what the one before recorded, and a run whose versions
were already processed by an earlier one gets None and does nothing.
:func:`record_processed` refuses a range that does not start just after the
recorded version (:class:`~airflow_delta_provider.delta.errors.VersionRangeConflictError`),
so overlapping runs fail loudly rather than silently processing twice.

Parsing a DAG file that imports this module imports neither the core nor
pyarrow: the probe is opened when :func:`version_range` runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypedDict

log = logging.getLogger(__name__)

#: Prefix of the asset state key that holds a consumer's last processed version.
PROCESSED_KEY_PREFIX = "processed_version:"


class VersionRange(TypedDict):
    """The versions to process: ``start_version`` to ``end_version``, both included."""

    #: The table path, as given to :func:`version_range`.
    table: str
    start_version: int
    end_version: int
    #: The versions the triggering events named (for the log; the range does not depend on them).
    event_versions: list[int]


class StateStore(Protocol):
    """Where a consumer keeps its progress: ``asset_state_store[asset]`` (or a Variable's get/set)."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...


def version_range(
    events: Mapping[Any, Iterable[Any]] | Iterable[Any] | None,
    last_processed: int | None,
    *,
    table_path: str,
    asset: Any = None,
    initial_version: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    storage_conn_id: str | None = None,
) -> VersionRange | None:
    """The versions of ``table_path`` to process now, or None when nothing is new.

    The range starts just after ``last_processed`` and ends at the table's
    newest version, read from its log now (two requests). It does not depend
    on which events reached this run: a run that got no event for some
    versions still processes them, and a run whose versions an earlier run
    already processed gets None.

    :param events: The run's ``triggering_asset_events``: the whole mapping
        (with ``asset``), or the events of one asset. Events of
        :class:`~airflow_delta_provider.triggers.delta_table.DeltaTableEventTrigger`
        (``extra["payload"]["versions"]``) and of the writing operators
        (``extra["version"]``) are read; empty or None for a manual run.
    :param last_processed: The last version this consumer processed
        (:func:`processed_version`); None when it has processed none.
    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://`` or ``gs://`` URI.
    :param asset: The asset whose events to read from the mapping; None reads every event in it.
    :param initial_version: Where a consumer that has processed nothing
        starts; default the first version the events name (what the watcher
        saw after it started), else 0 (the whole table).
    :param storage_options: The store's settings (credentials stay in the task).
    :param storage_conn_id: Or a connection to read them from.
    """
    named = event_versions(_events_of(events, asset))
    if last_processed is not None:
        start = int(last_processed) + 1
    elif initial_version is not None:
        start = int(initial_version)
    else:
        start = named[0] if named else 0
    latest = _latest_version(table_path, storage_options, storage_conn_id)
    if latest is None or latest < start:
        log.info(
            "Nothing to process in %s: its newest version is %s, the next to process %s (events named %s)",
            table_path,
            latest,
            start,
            named,
        )
        return None
    log.info("Versions %s to %s of %s to process (events named %s)", start, latest, table_path, named)
    return VersionRange(table=table_path, start_version=start, end_version=latest, event_versions=named)


def event_versions(events: Iterable[Any]) -> list[int]:
    """The versions a run's asset events name, sorted, each once."""
    versions: set[int] = set()
    for event in events:
        extra = getattr(event, "extra", None)
        if extra is None and isinstance(event, Mapping):
            extra = event.get("extra")
        if not isinstance(extra, Mapping):
            continue
        payload = extra.get("payload")
        source = payload if isinstance(payload, Mapping) else extra
        named = source.get("versions")
        if named is None:
            named = [source.get("version")]
        versions.update(int(v) for v in named if v is not None)
    return sorted(versions)


def progress_key(consumer: str) -> str:
    """The state key of ``consumer``'s last processed version."""
    return f"{PROCESSED_KEY_PREFIX}{consumer}"


def processed_version(state: StateStore, consumer: str) -> int | None:
    """The last version ``consumer`` recorded in ``state``; None before its first range.

    :param state: ``asset_state_store[asset]`` of a task with the asset among its inlets.
    :param consumer: A name unique among the asset's consumers, e.g. the DAG id.
    """
    value = state.get(progress_key(consumer))
    return None if value is None else int(value)


def record_processed(state: StateStore, consumer: str, done: VersionRange | None) -> int | None:
    """Record that ``consumer`` processed ``done``; call it after the work succeeded.

    Returns the version now recorded. None (nothing new) records nothing, and
    recording the same range again (a retried task) changes nothing. Raises
    VersionRangeConflictError when ``done`` does not start just after the
    recorded version: another run processed those versions meanwhile.
    """
    current = processed_version(state, consumer)
    if done is None:
        return current
    end = int(done["end_version"])
    if current == end:
        return current
    if current is not None and int(done["start_version"]) != current + 1:
        from airflow_delta_provider.delta.errors import VersionRangeConflictError

        raise VersionRangeConflictError(
            f"{consumer} processed versions {done['start_version']} to {end} of {done['table']}, "
            f"but had recorded version {current} as processed: two runs processed the same "
            "versions; give the consumer max_active_runs=1"
        )
    state.set(progress_key(consumer), end)
    return end


def _events_of(events: Mapping[Any, Iterable[Any]] | Iterable[Any] | None, asset: Any) -> Iterable[Any]:
    if events is None:
        return ()
    if isinstance(events, Mapping):
        if asset is not None:
            try:
                return events[asset]
            except KeyError:  # no event of this asset reached the run (a manual run)
                return ()
        return [event for per_key in events.values() for event in per_key]
    return events


def _latest_version(
    table_path: str, storage_options: Mapping[str, Any] | None, storage_conn_id: str | None
) -> int | None:
    from airflow_delta_provider.delta.log.version_probe import VersionProbe

    options = dict(storage_options or {})
    if storage_conn_id:
        from airflow_delta_provider.utils.storage_connection import storage_settings

        options.update(storage_settings(storage_conn_id))
    return VersionProbe(table_path, options or None).latest()


__all__ = [
    "PROCESSED_KEY_PREFIX",
    "VersionRange",
    "event_versions",
    "processed_version",
    "progress_key",
    "record_processed",
    "version_range",
]
