"""An operation on a table named in a catalog: bind the name, run on the location, sync the entry.

Every way of running an operation (the Spark CLI, the Airflow hooks, the
core CLI) goes through :func:`bind_spec`: a spec whose table is a catalog
reference becomes the same spec on the table's location, with the bound
:class:`~airflow_delta_provider.delta.catalog.binding.CatalogTable` beside it
(its vended credentials, and :meth:`~.CatalogTable.sync` for after the run).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from airflow_delta_provider.delta.catalog.binding import CatalogTable, bind
from airflow_delta_provider.delta.catalog.model import CatalogClient
from airflow_delta_provider.delta.catalog.settings import CatalogSettings
from airflow_delta_provider.operations.spec.base import OperationSpec


def bind_spec(
    spec: OperationSpec, settings: CatalogSettings | None = None, client: CatalogClient | None = None
) -> tuple[OperationSpec, CatalogTable | None]:
    """``spec`` on its table's location, and the binding; ``(spec, None)`` for a path.

    Catalog errors (an unknown name, an entry that is not Delta, an unreachable
    catalog, a refused grant) are raised here, before anything runs.
    """
    location = getattr(spec, "location", None)
    catalog = bind(
        spec.table_path,
        settings,
        write=not spec.reads_only,
        create=spec.creates_table,
        location=location,
        client=client,
    )
    if catalog is None:
        return spec, None
    changes: dict[str, Any] = {"table_path": catalog.location}
    if any(f.name == "location" for f in dataclasses.fields(spec)):
        changes["location"] = catalog.location
    return dataclasses.replace(spec, **changes), catalog


__all__ = ["bind_spec"]
