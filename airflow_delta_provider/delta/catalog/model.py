"""What a catalog says about a table, and the credentials it vends.

Every catalog client (:mod:`.unity`, :mod:`.glue`, :mod:`.hive`) speaks
:class:`CatalogClient`: the entry by name, a new table's default place, the
registration of a table and the copy of its columns, and, for Unity Catalog,
short-lived storage credentials.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_delta_provider.delta.catalog.reference import CatalogReference


@dataclass(frozen=True)
class CatalogEntry:
    """A table's entry in a catalog."""

    location: str
    #: Whether the entry is a Delta table (other entries are refused).
    is_delta: bool
    #: The entry's columns, as ``(name, type text)``, to tell whether they need an update.
    columns: tuple[tuple[str, str], ...] = ()
    #: The catalog's id of the table (Unity Catalog's ``table_id``), for its credentials.
    table_id: str | None = None
    #: What the entry is, for the error that refuses a non-Delta one (``PARQUET``, ``VIEW``).
    kind: str = ""


@dataclass(frozen=True)
class VendedCredentials:
    """Short-lived storage settings a catalog handed out for one table or path."""

    #: Store settings in the core's names (``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_SAS_KEY``).
    options: Mapping[str, str] = field(repr=False)
    #: When they expire (epoch seconds); None: they do not (local storage).
    expires_at: float | None = None
    #: Whether they allow writes.
    writable: bool = False

    def expires_within(self, seconds: float, now: float | None = None) -> bool:
        """Whether they expire in less than ``seconds`` from ``now``."""
        if self.expires_at is None:
            return False
        return self.expires_at - (time.time() if now is None else now) < seconds


class CatalogClient(Protocol):
    """One catalog's answers about tables."""

    def get(self, ref: CatalogReference) -> CatalogEntry | None:
        """The entry by name; None when the catalog has none (CatalogTableNotFoundError
        when the schema or database does not exist either)."""

    def default_location(self, ref: CatalogReference) -> str:
        """Where a new table of that name goes: its schema's (or database's) storage root and its name."""

    def register(
        self, ref: CatalogReference, location: str, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        """Create the entry of the Delta table at ``location``."""

    def update_columns(
        self, ref: CatalogReference, entry: CatalogEntry, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        """Copy the table's current columns to its entry."""

    def table_credentials(self, ref: CatalogReference, entry: CatalogEntry, write: bool) -> VendedCredentials | None:
        """Storage credentials for the table (None: the catalog vends none)."""

    def path_credentials(self, location: str, write: bool) -> VendedCredentials | None:
        """Storage credentials for a location no entry names yet (a table being created)."""

    def close(self) -> None:
        """Release connections."""


__all__ = ["CatalogClient", "CatalogEntry", "VendedCredentials"]
