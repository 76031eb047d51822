"""Triggers that wait for new versions of a Delta table.

Two triggers, one probe:

- :class:`DeltaTableVersionTrigger` backs the deferrable
  :class:`~airflow_delta_provider.sensors.delta_table.DeltaTableVersionSensor`:
  it fires once, when a version newer than a baseline exists.
- :class:`DeltaTableEventTrigger` backs an ``AssetWatcher``: it fires once per
  new table version, in order, and keeps its watermark in the asset state store.

Both read ``_delta_log`` through the core's
:class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe`, with its
async methods (obstore's async API), so the triggerer's event loop never
waits on storage; a steady poll costs one existence check. A
``storage_conn_id`` is resolved in the triggerer when the trigger runs: the
serialized trigger holds the connection's id, never a secret.

The core (and with it pyarrow) is imported when a probe is built, never when
this module is imported: DAG files that use these triggers must parse fast.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

if TYPE_CHECKING:
    from airflow_delta_provider.delta.log.version_probe import VersionInfo, VersionProbe

#: Key of the watermark that :class:`DeltaTableEventTrigger` keeps per asset.
WATERMARK_KEY = "last_seen_version"


def open_probe(table_path: str, storage_options: dict[str, str] | None = None) -> VersionProbe:
    """A :class:`VersionProbe` on ``table_path``; imports the core only now."""
    from airflow_delta_provider.delta.log.version_probe import VersionProbe

    return VersionProbe(table_path, storage_options or None)


async def open_probe_async(table_path: str, storage_conn_id: str | None) -> VersionProbe:
    """:func:`open_probe` for a trigger: the connection is read without blocking."""
    from airflow_delta_provider.utils.storage_connection import storage_settings_async

    settings = await storage_settings_async(storage_conn_id)
    return await asyncio.to_thread(open_probe, table_path, settings)  # first import of the core


def missing_table_message(table_path: str) -> str:
    return (
        f"no Delta table at {table_path!r} (no commit in its _delta_log); "
        "pass wait_for_creation=True to wait for it to be created"
    )


def poll_once(
    probe: VersionProbe, after_version: int, *, table_seen: bool, wait_for_creation: bool
) -> tuple[VersionInfo | None, bool]:
    """One poke: the latest version if one is newer than ``after_version``.

    Returns ``(info or None, table_seen)``. Existence is checked until the
    table has been seen once, so a steady poke costs one call. Raises
    TableNotFoundError for a missing table unless ``wait_for_creation``.
    """
    from airflow_delta_provider.delta.errors import TableNotFoundError

    found = probe.newer_than(after_version)
    if found is not None:
        return probe.info(found), True
    if not table_seen:
        if probe.table_exists(after_version):
            table_seen = True
        elif not wait_for_creation:
            raise TableNotFoundError(missing_table_message(probe.table_path))
    return None, table_seen


async def poll_once_async(
    probe: VersionProbe, after_version: int, *, table_seen: bool, wait_for_creation: bool
) -> tuple[VersionInfo | None, bool]:
    """:func:`poll_once` through the probe's async methods."""
    from airflow_delta_provider.delta.errors import TableNotFoundError

    found = await probe.newer_than_async(after_version)
    if found is not None:
        return await probe.info_async(found), True
    if not table_seen:
        if await probe.table_exists_async(after_version):
            table_seen = True
        elif not wait_for_creation:
            raise TableNotFoundError(missing_table_message(probe.table_path))
    return None, table_seen


class DeltaTableVersionTrigger(BaseTrigger):
    """Fire once when a version newer than ``after_version`` exists.

    The event payload is ``{"status": "success", "version", "baseline_version",
    "table", "timestamp", "operation"}``, ``version`` being the latest version
    at that moment; or ``{"status": "error", "error_type", "message", "table"}``
    when the table is missing (and ``wait_for_creation`` is off) or unreadable.

    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://``/``az://`` or ``gs://`` URI.
    :param after_version: The baseline; -1 means any version at all.
    :param poll_interval: Seconds between two probes.
    :param wait_for_creation: Keep waiting while the table does not exist.
    :param storage_conn_id: The store's connection (None: the cloud's own chain).
    """

    def __init__(
        self,
        table_path: str,
        after_version: int,
        poll_interval: float = 60.0,
        wait_for_creation: bool = False,
        storage_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        self.table_path = table_path
        self.after_version = after_version
        self.poll_interval = poll_interval
        self.wait_for_creation = wait_for_creation
        self.storage_conn_id = storage_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table_path": self.table_path,
                "after_version": self.after_version,
                "poll_interval": self.poll_interval,
                "wait_for_creation": self.wait_for_creation,
                "storage_conn_id": self.storage_conn_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_delta_provider.delta.errors import DeltaError

        try:
            probe = await open_probe_async(self.table_path, self.storage_conn_id)
            table_seen = False
            while True:
                info, table_seen = await poll_once_async(
                    probe,
                    self.after_version,
                    table_seen=table_seen,
                    wait_for_creation=self.wait_for_creation,
                )
                if info is not None:
                    self.log.info("Delta table %s has version %s", self.table_path, info.version)
                    yield TriggerEvent(
                        {
                            "status": "success",
                            **info.to_dict(),
                            "baseline_version": self.after_version,
                            "table": self.table_path,
                        }
                    )
                    return
                await asyncio.sleep(self.poll_interval)
        except (DeltaError, OSError) as exc:
            yield TriggerEvent(
                {
                    "status": "error",
                    "error_type": type(exc).__name__,
                    "message": str(exc),
                    "table": self.table_path,
                }
            )


class DeltaTableEventTrigger(BaseEventTrigger):
    """Fire once per new version of a Delta table, for event-driven scheduling.

    Put it on an ``Asset`` through an ``AssetWatcher``; each event becomes an
    asset event whose ``extra["payload"]`` is ``{"version", "table",
    "timestamp", "operation"}``. When several versions land between two
    probes, one event is fired for each, in version order.

    The watermark (the last version fired) lives in the asset state store
    under ``last_seen_version``, so a restarted triggerer resumes where it
    stopped instead of firing again. With no watermark yet, the baseline is
    ``after_version`` when given, else the table's latest version at start:
    only versions committed after that fire. A missing table is waited for;
    its version 0 is then a new version.

    The watermark is advanced before the event is handed to the triggerer,
    as Airflow's asset state store guide does: a crash in between loses that
    event rather than repeating it. If the watermark has fallen behind log
    cleanup (the watcher was off for longer than the log retention), the
    trigger logs the gap and resumes at the oldest commit still in the log.

    :param table_path: The table root: a path or a ``file://``, ``s3://``,
        ``abfss://``/``az://`` or ``gs://`` URI.
    :param poll_interval: Seconds between two probes when nothing is new.
    :param after_version: Baseline used only when no watermark is stored yet.
    :param storage_conn_id: The store's connection (None: the cloud's own chain).
    """

    def __init__(
        self,
        table_path: str,
        poll_interval: float = 60.0,
        after_version: int | None = None,
        storage_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        self.table_path = table_path
        self.poll_interval = poll_interval
        self.after_version = after_version
        self.storage_conn_id = storage_conn_id
        self._memory_watermark: int | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table_path": self.table_path,
                "poll_interval": self.poll_interval,
                "after_version": self.after_version,
                "storage_conn_id": self.storage_conn_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_delta_provider.delta.errors import StorageError

        probe = await open_probe_async(self.table_path, self.storage_conn_id)
        last = await self._start_watermark(probe)
        while True:
            version = last + 1
            try:
                found = await probe.has_async(version)
                info = await probe.info_async(version) if found else None
            except (OSError, StorageError) as exc:  # storage hiccup: a watcher keeps watching
                self.log.warning("Cannot read the log of %s: %s", self.table_path, exc)
                info = None
            if info is None:
                await asyncio.sleep(self.poll_interval)
                continue
            await self._save_watermark(version)
            last = version
            yield TriggerEvent({**info.to_dict(), "table": self.table_path})

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
                    "Versions %s to %s of %s were removed by log cleanup before they were seen; "
                    "resuming at version %s",
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
