"""The tables the Delta pages show, and who may see each.

A table is listed when a task of this deployment wrote it (the asset events
the writing operators emit, and their ``return_value`` XComs) or when an
administrator lists it by URI in the Airflow Variable :data:`VARIABLE`::

    {"tables": ["s3://lake/orders", {"uri": "s3://lake/raw", "conn_id": "aws_lake", "dag_ids": ["ingest"]}],
     "connections": {"s3://lake/": "aws_lake"}}

``connections`` names, by the longest matching URI prefix, the connection
whose credentials read a table (as a sensor's ``storage_conn_id`` does);
without one, the api-server's environment chain is used. A table written by
tasks is visible to a user who may read one of those tasks' DAGs; a table
listed by hand to every authenticated user, or, when its entry names
``dag_ids``, to those who may read one of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_delta_provider.assets.uri import table_asset_uri
from airflow_delta_provider.utils.ui_paths import table_id

log = logging.getLogger(__name__)

#: The Airflow Variable of the tables listed by hand and the connections by URI prefix.
VARIABLE = "delta_ui"
#: The newest asset events and XComs read to find the tables (bounded: one query each).
MAX_RECORDS = 5000
#: The keys of a Delta operator's result (``DeltaOperationResult``).
RESULT_KEYS = frozenset({"table", "version", "operation", "metrics"})


@dataclass
class TableEntry:
    """One table: its asset URI, the connection that reads it, the DAGs that wrote it."""

    uri: str
    conn_id: str | None = None
    dag_ids: set[str] = field(default_factory=set)
    #: Listed in :data:`VARIABLE`; ``dag_ids`` then limits who sees it only when the entry names some.
    by_hand: bool = False

    @property
    def id(self) -> str:
        return table_id(self.uri)

    def visible_to(self, readable_dag_ids: set[str]) -> bool:
        if self.by_hand and not self.dag_ids:
            return True
        return bool(self.dag_ids & readable_dag_ids)


def build_known_tables(
    written: Iterable[tuple[str, str | None]], settings: Mapping[str, Any] | None
) -> dict[str, TableEntry]:
    """The tables by id, from (table path or asset URI, DAG id) pairs and :data:`VARIABLE`'s settings."""
    settings = settings or {}
    tables: dict[str, TableEntry] = {}

    def entry(path: str) -> TableEntry | None:
        try:
            uri = table_asset_uri(path)
        except Exception:  # a path no store understands: nothing to show
            log.warning("Delta pages: %r names no table the provider can read; left out", path)
            return None
        return tables.setdefault(table_id(uri), TableEntry(uri))

    for path, dag_id in written:
        found = entry(path)
        if found is not None and dag_id:
            found.dag_ids.add(dag_id)
    for item in settings.get("tables") or []:
        spec = {"uri": item} if isinstance(item, str) else dict(item)
        found = entry(str(spec["uri"]))
        if found is None:
            continue
        found.by_hand = True
        found.conn_id = spec.get("conn_id") or found.conn_id
        found.dag_ids.update(spec.get("dag_ids") or [])
    prefixes = {table_asset_uri(p) if "://" not in p else p: c for p, c in (settings.get("connections") or {}).items()}
    for found in tables.values():
        if found.conn_id is None:
            found.conn_id = _longest_prefix(found.uri, prefixes)
    return tables


def known_tables() -> dict[str, TableEntry]:
    """:func:`build_known_tables` over the metadata database and :data:`VARIABLE`."""
    from airflow.utils.session import create_session

    with create_session() as session:
        written = [*_asset_events(session), *_xcoms(session)]
    settings = _settings()
    return build_known_tables(written, settings)


def _asset_events(session: Any) -> list[tuple[str, str | None]]:
    from airflow.models.asset import AssetEvent, AssetModel
    from sqlalchemy import select

    rows = session.execute(
        select(AssetModel.uri, AssetEvent.source_dag_id, AssetEvent.extra)
        .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
        .order_by(AssetEvent.id.desc())
        .limit(MAX_RECORDS)
    )
    return [(uri, dag_id) for uri, dag_id, extra in rows if isinstance(extra, dict) and extra.keys() >= RESULT_KEYS]


def _xcoms(session: Any) -> list[tuple[str, str | None]]:
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    rows = session.execute(
        select(XComModel.dag_id, XComModel.value)
        .where(XComModel.key == "return_value")
        .order_by(XComModel.timestamp.desc())
        .limit(MAX_RECORDS)
    )
    out = []
    for dag_id, raw in rows:
        value = _json(raw)
        if isinstance(value, dict) and value.keys() >= RESULT_KEYS and isinstance(value["table"], str):
            out.append((value["table"], dag_id))
    return out


def _settings() -> dict[str, Any]:
    from airflow.models.variable import Variable

    raw = Variable.get(VARIABLE, default_var=None)
    value = _json(raw)
    if raw is not None and not isinstance(value, dict):
        log.warning("Delta pages: the Variable %s is not a JSON object; ignored", VARIABLE)
    return value if isinstance(value, dict) else {}


def _json(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def _longest_prefix(uri: str, prefixes: Mapping[str, str]) -> str | None:
    matches = [p for p in prefixes if uri.startswith(p)]
    return prefixes[max(matches, key=len)] if matches else None


__all__ = ["MAX_RECORDS", "VARIABLE", "TableEntry", "build_known_tables", "known_tables"]
