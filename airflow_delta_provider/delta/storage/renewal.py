"""Short-lived store credentials renewed before they expire, by every store of a table in this process.

A catalog (Unity Catalog) vends credentials that live an hour or so; a sensor
polls, and a Spark job runs, for longer. While a :class:`Lease` is held on a
table root, every :class:`~airflow_delta_provider.delta.storage.store.ObjectStorage`
under that root asks it before each request: when its
:class:`CredentialSource` says the credentials are about to expire, the source
is asked for fresh ones once, and each store rebuilds its client with them
before its next request (a store built earlier sees the new generation and
follows). So a commit after a 70-minute job, or a poll after hours of
waiting, uses credentials renewed before their expiry, and nothing else asks
the catalog again: a check is a clock comparison.

The lease is held by whatever binds the table (a sensor's probe, the Spark
CLI around an operation, a hook around a run) and released when it closes or
is collected. No secret is kept here beyond the lease's life.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Protocol

from airflow_delta_provider.delta.storage.location import TableLocation, parse_location


class CredentialSource(Protocol):
    """Where a table's short-lived credentials come from."""

    def expiring(self) -> bool:
        """Whether the credentials last handed out should be renewed now (cheap: no request)."""

    def renew(self) -> Mapping[str, str]:
        """Fresh credentials, as store settings in the core's names (``AZURE_STORAGE_SAS_KEY``)."""


class Lease:
    """A table root's credential source, registered while the lease lives."""

    def __init__(self, root: TableLocation, source: CredentialSource) -> None:
        self.root = root
        self.source = source
        #: Bumped at each renewal; a store built at an older generation rebuilds its client.
        self.generation = 0
        self.options: Mapping[str, str] = {}
        self._lock = threading.Lock()

    def current(self) -> tuple[int, Mapping[str, str]]:
        """``(generation, options)``, renewed first when the source says they expire soon."""
        with self._lock:
            if self.source.expiring():
                self.options = dict(self.source.renew())
                self.generation += 1
            return self.generation, self.options

    def covers(self, location: TableLocation) -> bool:
        root, other = self.root, location
        if (root.scheme, root.bucket, root.account) != (other.scheme, other.bucket, other.account):
            return False
        path = root.path.strip("/")
        return not path or other.path.strip("/") == path or other.path.strip("/").startswith(path + "/")

    def release(self) -> None:
        with _LOCK:
            if _LEASES.get(self.root) is self:
                del _LEASES[self.root]

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_LEASES: weakref.WeakValueDictionary[TableLocation, Lease] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def lease(table_root: str | TableLocation, source: CredentialSource) -> Lease:
    """Renew ``table_root``'s credentials through ``source`` while the returned lease is held."""
    root = table_root if isinstance(table_root, TableLocation) else parse_location(table_root)
    held = Lease(root, source)
    with _LOCK:
        _LEASES[root] = held
    return held


def lease_for(location: TableLocation) -> Lease | None:
    """The lease covering ``location`` (a table root or a folder under it), if any."""
    if not _LEASES:
        return None
    with _LOCK:
        leases = list(_LEASES.values())
    return next((held for held in leases if held.covers(location)), None)


__all__ = ["CredentialSource", "Lease", "lease", "lease_for"]
