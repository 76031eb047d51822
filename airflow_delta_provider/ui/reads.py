"""The reads behind the Delta pages, on the api-server: the core only, no Spark, no JVM.

Each table is opened with its connection's store settings
(:func:`~airflow_delta_provider.utils.storage_connection.settings_from_connection`,
as a sensor's ``storage_conn_id``) or the api-server's environment chain. What
a version says never changes, so timeline rows and version details are cached
by (table, version), and the summary and health report by (table, latest
version): a page costs one listing of ``_delta_log`` plus the versions no one
has looked at yet. A table that cannot be read gives one line
(:class:`Unreachable`), with every credential value masked out of it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from cachetools import LRUCache, TTLCache

if TYPE_CHECKING:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.delta.timeline.entries import TimelineEntry, TimelinePage
    from airflow_delta_provider.ui.tables import TableEntry

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")

#: Seconds an opened table (its store and credentials) is kept before the connection is read again.
TABLE_TTL = 300


class Unreachable(Exception):
    """A table the api-server cannot read; ``str()`` is the one line the pages show."""


@dataclass(frozen=True)
class TableSummary:
    """One row of the tables page: the latest version and the health badge."""

    latest: int
    last_write: int | None
    report: dict[str, Any]
    decisions: list[dict[str, Any]]

    @property
    def due(self) -> list[str]:
        return [d["step"] for d in self.decisions if d["due"]]

    def to_dict(self) -> dict[str, Any]:
        r = self.report
        return {
            "latestVersion": self.latest,
            "lastWrite": self.last_write,
            "lastOptimize": r["lastOptimize"],
            "lastVacuum": r["lastVacuum"],
            "numFiles": r["numFiles"],
            "sizeInBytes": r["sizeInBytes"],
            "health": {"due": self.due},
        }


class Locked(MutableMapping[K, V]):
    """A cache that threads share (FastAPI runs page functions on a thread pool)."""

    def __init__(self, inner: MutableMapping[K, V]) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def __getitem__(self, key: K) -> V:
        with self._lock:
            return self._inner[key]

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._inner[key] = value

    def __delitem__(self, key: K) -> None:
        with self._lock:
            del self._inner[key]

    def __iter__(self) -> Iterator[K]:
        with self._lock:
            return iter(list(self._inner))

    def __len__(self) -> int:
        with self._lock:
            return len(self._inner)


class TableReader:
    """Opens tables and reads them for the pages, with the caches described above."""

    def __init__(self, settings: Callable[[str | None], dict[str, str]] | None = None) -> None:
        self._settings = settings or connection_settings
        self._tables: Locked[tuple[str, str | None], tuple[DeltaTable, dict[str, str]]] = Locked(
            TTLCache(maxsize=256, ttl=TABLE_TTL)
        )
        self.entries: Locked[tuple[str, int], TimelineEntry] = Locked(LRUCache(maxsize=100_000))
        self._details: Locked[tuple[str, int], dict[str, Any]] = Locked(LRUCache(maxsize=512))
        self._summaries: Locked[tuple[str, int], TableSummary] = Locked(LRUCache(maxsize=512))

    def summary(self, table: TableEntry) -> TableSummary:
        """The latest version, last write and health (the report's thresholds' decisions)."""

        def read(t: DeltaTable) -> TableSummary:
            from airflow_delta_provider.delta.health.decisions import assess

            latest = t.latest_version()
            found = self._summaries.get((t.root, latest))
            if found is None:
                report, decisions = assess(t)
                doc = report.to_dict()
                history = doc.get("history") or []
                last_write = history[0]["timestamp"] if history else doc["timestamp"]
                found = TableSummary(latest, last_write, doc, [d.to_dict() for d in decisions])
                self._summaries[(t.root, latest)] = found
            return found

        return self._read(table, read)

    def timeline(self, table: TableEntry, before: int | None, limit: int) -> TimelinePage:
        from airflow_delta_provider.delta.timeline.entries import timeline

        return self._read(table, lambda t: timeline(t, before, limit, cache=self.entries))

    def version(self, table: TableEntry, version: int) -> dict[str, Any]:
        """:func:`~airflow_delta_provider.delta.timeline.detail.version_detail`, with the table's ``latestVersion``."""
        from airflow_delta_provider.delta.timeline.detail import version_detail

        def read(t: DeltaTable) -> dict[str, Any]:
            from airflow_delta_provider.delta.errors import TableNotFoundError, VersionNotFoundError

            key = (t.root, version)
            found = self._details.get(key)
            if found is None:
                try:
                    found = self._details[key] = version_detail(t, version)
                except VersionNotFoundError:
                    if not t.exists():  # no table at all: the table's line, not the version's 404
                        raise TableNotFoundError(f"{t.uri} is not a Delta table: no commits in _delta_log") from None
                    raise
            return {**found, "latestVersion": t.latest_version()}  # the latest changes: never cached

        return self._read(table, read)

    def _read(self, table: TableEntry, read: Callable[[DeltaTable], V]) -> V:
        from airflow_delta_provider.delta.errors import InvalidInputError, VersionNotFoundError

        options: dict[str, str] = {}
        try:
            t, options = self._open(table)
            return read(t)
        except (InvalidInputError, VersionNotFoundError):
            raise  # the request's fault, not the table's
        except Exception as exc:
            line = mask(f"{type(exc).__name__}: {exc}".splitlines()[0], secret_values(options))
            log.warning("Delta pages: cannot read %s: %s", table.uri, line)
            raise Unreachable(line) from None

    def _open(self, table: TableEntry) -> tuple[DeltaTable, dict[str, str]]:
        key = (table.uri, table.conn_id)
        found = self._tables.get(key)
        if found is None:
            from airflow_delta_provider.delta.table import DeltaTable

            options = self._settings(table.conn_id)
            found = self._tables[key] = (DeltaTable(table.uri, options or None), options)
        return found


def connection_settings(conn_id: str | None) -> dict[str, str]:
    """The store settings of connection ``conn_id``, read on the server (empty for None)."""
    if not conn_id:
        return {}
    from airflow.models.connection import Connection

    from airflow_delta_provider.utils.storage_connection import settings_from_connection

    return settings_from_connection(Connection.get_connection_from_secrets(conn_id))


def secret_values(options: Mapping[str, str]) -> list[str]:
    """The values of store settings that are credentials (keys, secrets, tokens)."""
    return [v for k, v in options.items() if any(w in k.upper() for w in ("KEY", "SECRET", "TOKEN", "PASSWORD"))]


def mask(text: str, secrets: Any) -> str:
    """``text`` with every value of ``secrets`` longer than 3 characters replaced by ``***``."""
    for value in sorted((str(s) for s in secrets if s and len(str(s)) > 3), key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def summaries(reader: TableReader, tables: Mapping[str, TableEntry]) -> dict[str, TableSummary | Unreachable]:
    """Each table's summary, or why it cannot be read."""
    out: dict[str, TableSummary | Unreachable] = {}
    for key, table in tables.items():
        try:
            out[key] = reader.summary(table)
        except Unreachable as exc:
            out[key] = exc
    return out


__all__ = ["TableReader", "TableSummary", "Unreachable", "connection_settings", "mask", "secret_values", "summaries"]
