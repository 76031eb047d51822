"""Triggers that wait for new versions of a Delta table.

Three triggers, one probe:

- :class:`DeltaTableVersionTrigger` backs the deferrable
  :class:`~airflow_delta_provider.sensors.delta_table.DeltaTableVersionSensor`:
  it fires once, when a version newer than a baseline passes its filters.
- :class:`DeltaTableEventTrigger` backs an ``AssetWatcher``: it fires one
  event per poll for the new versions that pass its filters, and keeps its
  watermark in the asset state store.
- :class:`DeltaPartitionTrigger` backs the deferrable
  :class:`~airflow_delta_provider.sensors.delta_table.DeltaPartitionSensor`:
  it fires once, when a partition holds live data.

They take their common arguments (table, connection, poll interval) and
``serialize()`` from one base, :class:`_TableTrigger`, and the commit filters
from :class:`_CommitTrigger`; each declares only its own arguments.

By default only commits that change data fire
(:class:`~airflow_delta_provider.delta.watch.commit_filter.CommitFilter`):
OPTIMIZE, VACUUM, REORG ... PURGE and metadata-only commits do not. They read
``_delta_log`` through the core's
:class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe`, with its
async methods (obstore's async API), so the triggerer's event loop never
waits on storage; a steady poll costs one existence check, and each new
commit is read once. A
``storage_conn_id`` is resolved in the triggerer when the trigger runs: the
serialized trigger holds the connection's id, never a secret.

The core (and with it pyarrow) is imported when a probe is built, never when
this module is imported: DAG files that use these triggers must parse fast.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from airflow_delta_provider.assets.events import WATERMARK_KEY

if TYPE_CHECKING:
    from airflow_delta_provider.delta.log.commit_summary import VersionInfo
    from airflow_delta_provider.delta.log.version_probe import VersionProbe
    from airflow_delta_provider.delta.watch.commit_watch import CommitWatch, Fired
    from airflow_delta_provider.delta.watch.outage import Outage


#: A partition filter: partition values by column, or a SQL predicate over partition columns.
Partition = Mapping[str, Any] | str


def open_probe(
    table_path: str, storage_options: dict[str, str] | None = None, catalog_conn_id: str | None = None
) -> VersionProbe:
    """A :class:`VersionProbe` on ``table_path``; imports the core only now. A table named in
    a catalog is probed at its location, with the read-only credentials the catalog vends,
    resolved once: the probe holds the binding's lease, so the credentials are renewed before
    they expire (asking for the bound table's credentials again, not for its name) however
    long the sensor or trigger waits."""
    from airflow_delta_provider.delta.log.version_probe import VersionProbe
    from airflow_delta_provider.hooks.delta_catalog import bind_for_reading

    location, options, catalog = bind_for_reading(table_path, storage_options, catalog_conn_id)
    lease = catalog.lease() if catalog is not None else None
    if catalog is not None and lease is None:
        catalog.close()  # nothing to renew (Glue, the metastore, local storage)
    return VersionProbe(location, options or None, lease)


async def open_probe_async(
    table_path: str, storage_conn_id: str | None, catalog_conn_id: str | None = None
) -> VersionProbe:
    """:func:`open_probe` for a trigger: the connection is read, and a catalog asked, without blocking."""
    from airflow_delta_provider.utils.storage_connection import storage_settings_async

    settings = await storage_settings_async(storage_conn_id)
    return await asyncio.to_thread(open_probe, table_path, settings, catalog_conn_id)  # first import of the core


def open_watch(
    probe: VersionProbe,
    after_version: int,
    *,
    data_changes_only: bool = True,
    operations: Sequence[str] | None = None,
    partition: Partition | None = None,
    every_commit: bool = False,
    skipped: Sequence[int] = (),
) -> CommitWatch:
    """A :class:`~airflow_delta_provider.delta.watch.commit_watch.CommitWatch`
    with these filters; bad filters raise InvalidInputError here."""
    from airflow_delta_provider.delta.watch.commit_filter import CommitFilter
    from airflow_delta_provider.delta.watch.commit_watch import CommitWatch

    commit_filter = CommitFilter.build(data_changes_only=data_changes_only, operations=operations, partition=partition)
    return CommitWatch(probe, after_version, commit_filter, every_commit=every_commit, skipped=skipped)


def missing_table_message(table_path: str) -> str:
    return (
        f"no Delta table at {table_path!r} (no commit in its _delta_log); "
        "pass wait_for_creation=True to wait for it to be created"
    )


def fired_result(fired: Fired, baseline: int, table_path: str) -> dict[str, Any]:
    """What a sensor returns and its trigger's event carries: the newest version
    that passed the filters (with its ``timestamp`` and ``operation``), every
    version that passed since the baseline, and those skipped by the filters."""
    return {
        **fired.last.to_dict(),
        "versions": fired.versions,
        "skipped_versions": list(fired.skipped),
        "baseline_version": baseline,
        "table": table_path,
    }


def poll_once(watch: CommitWatch, *, table_seen: bool, wait_for_creation: bool) -> tuple[Fired | None, bool]:
    """One poke: the commits after the watch's cursor that pass its filters.

    Returns ``(fired or None, table_seen)``. Existence is checked until the
    table has been seen once, so a steady poke costs one call. Raises
    TableNotFoundError for a missing table unless ``wait_for_creation``.
    """
    from airflow_delta_provider.delta.errors import TableNotFoundError

    before = watch.cursor
    fired = watch.poll()
    if fired is not None or watch.cursor != before:
        return fired, True
    if not table_seen:
        if watch.probe.table_exists(before):
            table_seen = True
        elif not wait_for_creation:
            raise TableNotFoundError(missing_table_message(watch.probe.table_path))
    return None, table_seen


async def poll_once_async(
    watch: CommitWatch, *, table_seen: bool, wait_for_creation: bool
) -> tuple[Fired | None, bool]:
    """:func:`poll_once` through the probe's async methods."""
    from airflow_delta_provider.delta.errors import TableNotFoundError

    before = watch.cursor
    fired = await watch.poll_async()
    if fired is not None or watch.cursor != before:
        return fired, True
    if not table_seen:
        if await watch.probe.table_exists_async(before):
            table_seen = True
        elif not wait_for_creation:
            raise TableNotFoundError(missing_table_message(watch.probe.table_path))
    return None, table_seen


def error_event(exc: Exception, table_path: str) -> TriggerEvent:
    return TriggerEvent({"status": "error", "error_type": type(exc).__name__, "message": str(exc), "table": table_path})


class _TableTrigger(BaseTrigger):
    """What every trigger here takes, and its ``serialize()``.

    A trigger keeps each constructor argument as an attribute of the same name;
    the triggerer re-creates it from ``serialize()``'s kwargs. Each trigger
    takes its own arguments and passes the rest here through ``**kwargs``.

    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://``/``az://`` or ``gs://`` URI.
    :param poll_interval: Seconds between two probes.
    :param storage_conn_id: The store's connection (None: the cloud's own
        chain). Only the id is kept: it is resolved when the trigger runs.
    :param catalog_conn_id: For a table named in a catalog (``uc://``,
        ``glue://``, ``hms://``): the catalog's connection (None: the
        environment's). Only the id and the name are kept: the name is
        resolved, and credentials vended, when the trigger runs.
    """

    #: Every constructor argument, in the order ``serialize()`` writes them.
    #: The order is part of a persisted trigger: an event trigger is known by
    #: a hash of its kwargs as written (``BaseEventTrigger.hash``).
    serialized_fields: tuple[str, ...] = ()

    def __init__(
        self,
        table_path: str,
        *,
        poll_interval: float = 60.0,
        storage_conn_id: str | None = None,
        catalog_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        self.table_path = table_path
        self.poll_interval = poll_interval
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                name: getattr(self, name)
                for name in self.serialized_fields
                # left out when unset, so a path's persisted trigger keeps its kwargs (and hash)
                if not (name == "catalog_conn_id" and self.catalog_conn_id is None)
            },
        )

    async def _open_probe(self) -> VersionProbe:
        return await open_probe_async(self.table_path, self.storage_conn_id, self.catalog_conn_id)

    def _outage(self) -> Outage:
        """The record of store outages for this run: polls that fail on a
        transient store error are warned about once per outage and polled
        through; other errors end the run (an error event)."""
        from airflow_delta_provider.delta.watch.outage import Outage

        return Outage(self.log, self.table_path)


class _CommitTrigger(_TableTrigger):
    """A :class:`_TableTrigger` that fires for the commits that pass its filters
    (:class:`~airflow_delta_provider.delta.watch.commit_filter.CommitFilter`).

    :param data_changes_only: Fire only for commits that add or remove rows
        (the default); False fires for every commit.
    :param operations: Fire only for these ``commitInfo.operation`` values.
    :param partition: Fire only for commits that change files in a matching
        partition: a mapping of partition values, or a SQL predicate over
        partition columns.
    """

    def __init__(
        self,
        table_path: str,
        *,
        data_changes_only: bool = True,
        operations: Sequence[str] | None = None,
        partition: Partition | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table_path, **kwargs)
        self.data_changes_only = data_changes_only
        self.operations = list(operations) if operations is not None else None
        self.partition = partition

    def _open_watch(self, probe: VersionProbe, after_version: int, **options: Any) -> CommitWatch:
        """A watch on ``probe`` with this trigger's filters; ``options`` as :func:`open_watch`'s."""
        return open_watch(
            probe,
            after_version,
            data_changes_only=self.data_changes_only,
            operations=self.operations,
            partition=self.partition,
            **options,
        )


class DeltaTableVersionTrigger(_CommitTrigger):
    """Fire once when a version newer than ``after_version`` passes the filters.

    The event payload is ``{"status": "success", "version", "timestamp",
    "operation", "versions", "skipped_versions", "baseline_version",
    "table"}`` (see :func:`fired_result`); or ``{"status": "error",
    "error_type", "message", "table"}`` when the table is missing (and
    ``wait_for_creation`` is off), unreadable, or a filter is invalid.

    :param table_path: The table root.
    :param after_version: The baseline; -1 means any version at all.
    :param wait_for_creation: Keep waiting while the table does not exist.
    :param baseline_version: The baseline to report, when the sensor already
        read past it (``after_version`` is then where it stopped reading).
    :param skipped_versions: Versions the sensor's filters already skipped.
    :param kwargs: ``poll_interval`` and ``storage_conn_id``
        (:class:`_TableTrigger`), and the filters ``data_changes_only``,
        ``operations`` and ``partition`` (:class:`_CommitTrigger`).
    """

    serialized_fields = (
        "table_path", "after_version", "poll_interval", "wait_for_creation", "storage_conn_id",
        "data_changes_only", "operations", "partition", "baseline_version", "skipped_versions", "catalog_conn_id",
    )  # fmt: skip

    def __init__(
        self,
        table_path: str,
        after_version: int,
        *,
        wait_for_creation: bool = False,
        baseline_version: int | None = None,
        skipped_versions: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table_path, **kwargs)
        self.after_version = after_version
        self.wait_for_creation = wait_for_creation
        self.baseline_version = after_version if baseline_version is None else baseline_version
        self.skipped_versions = list(skipped_versions or [])

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_delta_provider.delta.errors import DeltaError

        try:
            watch = self._open_watch(await self._open_probe(), self.after_version, skipped=self.skipped_versions)
            table_seen = False
            outage = self._outage()
            while True:
                fired = None
                with outage.polling():
                    fired, table_seen = await poll_once_async(
                        watch, table_seen=table_seen, wait_for_creation=self.wait_for_creation
                    )
                if fired is not None:
                    self.log.info("Delta table %s has version %s", self.table_path, fired.last.version)
                    yield TriggerEvent(
                        {"status": "success", **fired_result(fired, self.baseline_version, self.table_path)}
                    )
                    return
                await asyncio.sleep(self.poll_interval)
        except (DeltaError, OSError) as exc:
            yield error_event(exc, self.table_path)


class DeltaPartitionTrigger(_TableTrigger):
    """Fire once when a partition holds live data (at least ``min_records`` rows).

    The event payload is ``{"status": "success", "version", "num_files",
    "num_records", "partition", "table"}``, or an error event as
    :class:`DeltaTableVersionTrigger`'s. See
    :class:`~airflow_delta_provider.delta.watch.partition_watch.PartitionWatch`:
    the first probe reads the snapshot, later ones only the new commits.

    :param table_path: The table root.
    :param partition: A mapping of partition values, or a SQL predicate over
        partition columns.
    :param min_records: Rows the partition must hold, from ``numRecords`` stats.
    :param wait_for_creation: Keep waiting while the table does not exist.
    :param kwargs: ``poll_interval`` and ``storage_conn_id`` (:class:`_TableTrigger`).
    """

    serialized_fields = (
        "table_path", "partition", "min_records", "poll_interval", "wait_for_creation", "storage_conn_id",
        "catalog_conn_id",
    )  # fmt: skip

    def __init__(
        self,
        table_path: str,
        partition: Partition,
        min_records: int | None = None,
        *,
        wait_for_creation: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(table_path, **kwargs)
        self.partition = partition
        self.min_records = min_records
        self.wait_for_creation = wait_for_creation

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_delta_provider.delta.errors import DeltaError, TableNotFoundError
        from airflow_delta_provider.delta.watch.partition_watch import PartitionWatch

        try:
            watch = PartitionWatch(await self._open_probe(), self.partition, self.min_records)
            outage = self._outage()
            while True:
                state, polled = None, False
                with outage.polling():
                    state, polled = await watch.poll_async(), True
                if state is not None:
                    self.log.info(
                        "Partition %s of %s is ready at version %s", self.partition, self.table_path, state.version
                    )
                    yield TriggerEvent(
                        {"status": "success", **state.to_dict(), "partition": self.partition, "table": self.table_path}
                    )
                    return
                if polled and watch.version is None and not self.wait_for_creation:
                    raise TableNotFoundError(missing_table_message(self.table_path))
                await asyncio.sleep(self.poll_interval)
        except (DeltaError, OSError) as exc:
            yield error_event(exc, self.table_path)


class DeltaTableEventTrigger(_CommitTrigger, BaseEventTrigger):
    """Fire one event per poll for the new versions of a Delta table that pass its filters.

    Put it on an ``Asset`` through an ``AssetWatcher``; each event becomes an
    asset event whose ``extra["payload"]`` is ``{"versions", "version",
    "first_version", "operations", "timestamps", "operation", "timestamp",
    "table"}``: ``versions`` are the versions that passed, in order
    (``version`` the last and ``first_version`` the first of them), with one
    ``commitInfo`` operation and timestamp each; ``operation`` and
    ``timestamp`` are those of ``version``. Versions that land together
    (between two probes, or while the triggerer was down) arrive in one event,
    so one DAG run receives all of them: Airflow 3.3's scheduler may hand a
    run only the first of several events that arrive together
    (apache/airflow#56050).

    The watermark (the last version read, passing or not) lives in the
    asset state store under ``last_seen_version``, so a restarted triggerer
    resumes where it stopped instead of firing again. With no watermark yet,
    the baseline is ``after_version`` when given, else the table's latest
    version at start: only versions committed after that fire. A missing
    table is waited for; its version 0 is then a new version.

    The watermark is advanced before the event is handed to the triggerer,
    as Airflow's asset state store guide does: a crash in between loses that
    event rather than repeating it. If the watermark has fallen behind log
    cleanup (the watcher was off for longer than the log retention), the
    trigger logs the gap and resumes at the oldest commit still in the log.

    :param table_path: The table root.
    :param after_version: Baseline used only when no watermark is stored yet.
    :param kwargs: ``poll_interval`` (here: between two probes that find
        nothing new) and ``storage_conn_id`` (:class:`_TableTrigger`), and the
        filters ``data_changes_only``, ``operations`` and ``partition``
        (:class:`_CommitTrigger`).
    """

    serialized_fields = (
        "table_path", "poll_interval", "after_version", "storage_conn_id", "data_changes_only", "operations", "partition",
        "catalog_conn_id",
    )  # fmt: skip

    def __init__(self, table_path: str, *, after_version: int | None = None, **kwargs: Any) -> None:
        super().__init__(table_path, **kwargs)
        self.after_version = after_version
        self._memory_watermark: int | None = None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        probe = await self._open_probe()
        watch = self._open_watch(probe, await self._start_watermark(probe), every_commit=True)
        outage = self._outage()
        while True:
            before = watch.cursor
            fired = None  # the cursor moves only after a whole poll
            with outage.polling():
                fired = await watch.poll_async()
            if watch.cursor != before:
                await self._save_watermark(watch.cursor)
            watch.skipped.clear()  # an event reports what passed; nothing accumulates
            passed = self._not_from_tasks(fired)
            if not passed:
                await asyncio.sleep(self.poll_interval)
                continue
            yield TriggerEvent(self._payload(passed))

    def _not_from_tasks(self, fired: Fired | None) -> list[VersionInfo]:
        """The passed versions whose event is this watcher's to emit: a commit
        of a writing Airflow task (its token in ``commitInfo``) gets its event
        from that task, so the asset carries one event per version."""
        if fired is None:
            return []
        own = [info for info in fired.passed if info.token is None]
        if len(own) < len(fired.passed):
            self.log.info(
                "Versions %s of %s were committed by Airflow tasks, which emit their events",
                [info.version for info in fired.passed if info.token is not None],
                self.table_path,
            )
        return own

    def _payload(self, passed: Sequence[VersionInfo]) -> dict[str, Any]:
        return {
            **passed[-1].to_dict(),
            "versions": [info.version for info in passed],
            "first_version": passed[0].version,
            "operations": [info.operation for info in passed],
            "timestamps": [info.timestamp for info in passed],
            "table": self.table_path,
        }

    async def _start_watermark(self, probe: VersionProbe) -> int:
        stored = await self._load_watermark()
        if stored is None:
            if self.after_version is not None:
                start = self.after_version
            else:
                latest = await probe.latest_async()
                start = -1 if latest is None else latest
            await self._save_watermark(start)
            self.log.info("Watching %s for versions after %s", self.table_path, start)
            return start
        last = int(stored)
        if not await probe.has_async(last + 1):
            hint = await probe.checkpoint_hint_async()
            if hint > last + 1:
                first = await probe.first_present_async(last + 1, hint)
                self.log.warning(
                    "Versions %s to %s of %s were removed by log cleanup before they were seen; resuming at version %s",
                    last + 1,
                    first - 1,
                    self.table_path,
                    first,
                )
                last = first - 1
        return last

    async def _load_watermark(self) -> int | None:
        if self.asset_state_store is None:
            return self._memory_watermark
        value = await self.asset_state_store.aget(WATERMARK_KEY)
        return None if value is None else int(value)

    async def _save_watermark(self, version: int) -> None:
        # Without a state store (a trigger run outside a triggerer), the
        # watermark lives as long as this instance.
        self._memory_watermark = version
        if self.asset_state_store is not None:
            await self.asset_state_store.aset(WATERMARK_KEY, version)
