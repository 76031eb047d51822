"""A table named in a catalog, bound to its storage location for one operation.

:func:`bind` resolves a reference (:mod:`.reference`) once, before anything
runs: the entry's location, or for a table being created its given location
or its schema's storage root; and, from Unity Catalog, temporary storage
credentials (read-only for a read, read-write for a write: a write with a
read-only grant is refused here, before anything is written). Everything
downstream works on :attr:`CatalogTable.location`. While the binding is open,
:meth:`CatalogTable.lease` renews the vended credentials before they expire,
for every store of the table in the process
(:mod:`~airflow_delta_provider.delta.storage.renewal`).

After the operation, :meth:`CatalogTable.sync` registers a table it created
and copies a changed schema to the entry. That runs after the commit and
never undoes it: a failed catalog update is a warning naming the table, and
the next write by name compares again and retries it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_delta_provider.delta.catalog.columns import hive_columns
from airflow_delta_provider.delta.catalog.model import CatalogClient, CatalogEntry, VendedCredentials
from airflow_delta_provider.delta.catalog.reference import GLUE, HIVE, UNITY, CatalogReference, parse_reference
from airflow_delta_provider.delta.catalog.settings import UNITY_URL_ENV, CatalogSettings
from airflow_delta_provider.delta.errors import (
    CatalogError,
    CatalogTableNotFoundError,
    InvalidArgumentError,
    NotADeltaTableError,
)
from airflow_delta_provider.delta.storage import renewal

log = logging.getLogger(__name__)

#: Vended credentials this close to their expiry (seconds) are renewed before their next use.
RENEW_MARGIN = 300.0
#: Each catalog kind's client library, and the extra that installs it.
_EXTRAS = {UNITY: ("httpx", "unity-catalog"), GLUE: ("boto3", "glue"), HIVE: ("hmsclient", "hive")}


def open_client(ref: CatalogReference, settings: CatalogSettings) -> CatalogClient:
    """The client of ``ref``'s catalog; InvalidArgumentError when it is not configured or not installed."""
    module, extra = _EXTRAS[ref.kind]
    try:
        __import__(module)
    except ImportError:
        raise InvalidArgumentError(
            f"{ref}: naming a table in this catalog needs {module} (pip install 'airflow-delta-provider[{extra}]')"
        ) from None
    if ref.kind == UNITY:
        if not settings.unity_url:
            raise InvalidArgumentError(f"{ref}: no Unity Catalog configured: set {UNITY_URL_ENV} or catalog_conn_id")
        from airflow_delta_provider.delta.catalog.unity import UnityCatalogClient

        return UnityCatalogClient(settings.unity_url, settings.unity_token, settings.timeout)
    if ref.kind == GLUE:
        from airflow_delta_provider.delta.catalog.glue import GlueCatalogClient

        return GlueCatalogClient(settings.aws, settings.timeout)
    if not settings.hive_uri:
        raise InvalidArgumentError(f"{ref}: no Hive Metastore configured: set HIVE_METASTORE_URI or catalog_conn_id")
    from airflow_delta_provider.delta.catalog.hive import HiveCatalogClient

    return HiveCatalogClient(settings.hive_uri, settings.timeout)


@dataclass
class CatalogTable:
    """A catalog name bound to its table's location for one operation."""

    ref: CatalogReference
    client: CatalogClient = field(repr=False)
    location: str
    #: The entry as it was when bound; None: the table is being created by name.
    entry: CatalogEntry | None
    write: bool
    credentials: VendedCredentials | None = field(default=None, repr=False)
    _lease: renewal.Lease | None = field(default=None, init=False, repr=False)
    _on_renew: Callable[[Mapping[str, str]], Any] | None = field(default=None, init=False, repr=False)

    def storage_options(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` with the vended credentials over it, renewed first when they expire soon."""
        if self._lease is not None:
            self._lease.current()  # renews through the lease, so the table's open stores follow
        elif self.expiring():
            self.renew()
        vended = dict(self.credentials.options) if self.credentials is not None else {}
        return {**dict(base or {}), **vended}

    def expiring(self) -> bool:
        """Whether the vended credentials have less than :data:`RENEW_MARGIN` left (no request)."""
        return self.credentials is not None and self.credentials.expires_within(RENEW_MARGIN)

    def renew(self) -> dict[str, str]:
        """Ask the catalog for fresh credentials (on a long job, before the old ones expire).

        The bound entry's id is reused: the name is not resolved again.
        """
        if self.entry is not None:
            self.credentials = self.client.table_credentials(self.ref, self.entry, self.write)
        else:
            self.credentials = self.client.path_credentials(self.location, self.write)
        log.info("Renewed the storage credentials the catalog vends for %s", self.ref)
        fresh = dict(self.credentials.options) if self.credentials is not None else {}
        if self._on_renew is not None:
            self._on_renew(fresh)
        return fresh

    def lease(self, on_renew: Callable[[Mapping[str, str]], Any] | None = None) -> renewal.Lease | None:
        """Renew the credentials of every store of this table in this process while the
        binding is open (:mod:`~airflow_delta_provider.delta.storage.renewal`); None when
        the catalog vended none that expire. :meth:`close` releases it.

        :param on_renew: Also called with each renewal's credentials (the Spark CLI
            copies them to the environment its later ``arrow`` jobs forward to workers).
        """
        if self._lease is None and self.credentials is not None and self.credentials.expires_at is not None:
            self._on_renew = on_renew
            self._lease = renewal.lease(self.location, self)
        return self._lease

    def sync(self, storage_options: Mapping[str, str] | None = None, warn: Callable[[str], Any] | None = None) -> str:
        """After a write: register the table when it has no entry, or copy changed columns to it.

        Returns what was done (``registered``, ``columns updated``, ``unchanged``,
        ``no table``, ``failed``). A catalog failure is logged through ``warn``
        (default: this module's logger) and never raised: the commit stands.
        """
        from airflow_delta_provider.delta.table import DeltaTable

        table = DeltaTable(self.location, self.storage_options(storage_options))
        if not table.exists():
            return "no table"
        snapshot = table.snapshot()
        schema, partitions = snapshot.schema, snapshot.partition_columns
        try:
            entry = self.client.get(self.ref)
            if entry is None:
                try:
                    self.client.register(self.ref, self.location, schema, partitions)
                except CatalogError:
                    if not self._registered_here():
                        raise
                self.entry = self.client.get(self.ref)
                return "registered"
            if list(entry.columns) != hive_columns(schema):
                self.client.update_columns(self.ref, entry, schema, partitions)
                return "columns updated"
            return "unchanged"
        except CatalogError as exc:
            (warn or log.warning)(
                f"the catalog entry of {self.ref} was not updated after the commit (the commit stands; "
                f"the next write retries): {type(exc).__name__}: {exc}"
            )
            return "failed"

    def _registered_here(self) -> bool:
        """Whether the catalog holds an entry at this table's location: after a failed
        registration, the one whose answer was lost (or whose retry the catalog refused
        as existing), which is ours. Anything else is another writer's, or nothing."""
        entry = self.client.get(self.ref)
        return entry is not None and entry.location.rstrip("/") == self.location.rstrip("/")

    def close(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None
        self.client.close()


def bind(
    table: str,
    settings: CatalogSettings | None = None,
    *,
    write: bool = False,
    create: bool = False,
    location: str | None = None,
    client: CatalogClient | None = None,
) -> CatalogTable | None:
    """``table`` bound to its location when it is a catalog reference; None for a location.

    :param write: The operation writes: Unity Catalog vends read-write credentials.
    :param create: The operation may create the table (APPEND, REGISTER): a
        name with no entry yet is bound to ``location``, or to its schema's
        storage root and its name, and registered by :meth:`CatalogTable.sync`.
    :param location: The table's location, for a table being created.
    """
    ref = parse_reference(table)
    if ref is None:
        return None
    client = client or open_client(ref, settings or CatalogSettings.from_env())
    try:
        entry = client.get(ref)
        if entry is not None:
            if not entry.is_delta:
                raise NotADeltaTableError(f"{ref} is a {entry.kind} in the catalog, not a Delta table")
            if location and location.rstrip("/") != entry.location.rstrip("/"):
                raise InvalidArgumentError(f"{ref} is registered at {entry.location}, not at {location}")
            credentials = client.table_credentials(ref, entry, write)
            return CatalogTable(ref, client, entry.location, entry, write, credentials)
        if not create:
            raise CatalogTableNotFoundError(f"{ref}: the catalog has no table of that name")
        where = location or client.default_location(ref)
        return CatalogTable(ref, client, where, None, write, client.path_credentials(where, write))
    except BaseException:
        client.close()
        raise


__all__ = ["RENEW_MARGIN", "CatalogTable", "bind", "open_client"]
