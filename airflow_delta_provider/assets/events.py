"""The asset event a writing operator emits when it commits: one per version.

An ``Asset`` among a task's outlets gets an event whenever the task
succeeds, also when it changed nothing: Airflow registers one for each
declared asset outlet. A Delta operator that committed nothing (an
idempotent retry, a MERGE or an OPTIMIZE with nothing to do) must not wake
the DAGs scheduled on its table, so each writing operator declares an
``AssetAlias`` instead (:func:`table_alias`), and adds the table's asset to
it only after a commit (:func:`emit_commit_event`), as Airflow's asset alias
guide describes for events decided at run time. Airflow then records one
event on the table's asset, with the commit in its ``extra``.

**Each version once.** The table's asset gets one event per version, from
whoever made it:

- a commit of a writing operator (its ``commitInfo`` carries the task
  instance's token) gets its event from that task, and an
  :class:`~airflow_delta_provider.triggers.delta_table.DeltaTableEventTrigger`
  watching the same table leaves it out;
- a commit of anything else (delta-spark, delta-rs, our CLI) gets its event
  from the watcher;
- a result found rather than made (an earlier try's commit, or the commit of
  an earlier write of the same ``txn``) gets an event only when the asset has
  none for that version yet (that try failed after its commit);
- a sensor's outlet on the table's own asset is dropped when it runs
  (:func:`drop_table_outlets`): its version has its event already.

**Which asset.** The event goes to the asset with the table's URI when the
task can name it without asking Airflow for a missing one (Airflow 3.3 logs
an error for an unknown asset, and a warning when it then creates one): an
``Asset`` with that URI declared in the writer's DAG (a task's outlets or
inlets, or the DAG's schedule), or the asset an ``AssetWatcher`` watches
(its watermark is in the asset's state store). Otherwise no DAG can be
scheduled on it, and the event is skipped with one DEBUG line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias
from airflow.sdk.definitions.asset import AssetRef

from airflow_delta_provider.assets.uri import table_asset_uri

if TYPE_CHECKING:
    from airflow_delta_provider.hooks.delta_operation import DeltaOperationResult

log = logging.getLogger(__name__)

#: Prefix of the alias name a writing operator declares for its table.
ALIAS_PREFIX = "delta-table:"
#: Key of the watermark a watcher's trigger keeps in its asset's state store.
WATERMARK_KEY = "last_seen_version"
#: How far Airflow's clock may lag the storage's when looking for a version's event.
CLOCK_SKEW = timedelta(hours=1)


def table_alias(table_path: str) -> AssetAlias:
    """The alias a writing operator declares for its table (named after the
    path as written in the DAG, templates included)."""
    return AssetAlias(name=f"{ALIAS_PREFIX}{table_path}")


def commit_event_extra(result: DeltaOperationResult, catalog_name: str | None = None) -> dict[str, Any]:
    """The ``extra`` of a commit's asset event (with the table's catalog name, when it has one)."""
    extra = {
        "version": result["version"],
        "operation": result["operation"],
        "table": result["table"],
        "metrics": dict(result["metrics"]),
    }
    if catalog_name is not None:
        extra["catalog_name"] = catalog_name
    return extra


def emit_commit_event(
    context: Mapping[str, Any],
    alias: AssetAlias,
    table_path: str,
    result: DeltaOperationResult,
    storage_options: Mapping[str, Any] | None = None,
    *,
    declared: Asset | None = None,
    committed_at_ms: int | None = None,
    catalog_name: str | None = None,
) -> str | None:
    """Add the table's asset to ``alias`` with the commit as ``extra``, once
    per version (see the module). Returns the URI of the asset the event is
    for; None when no event was added.

    :param declared: The table's asset, when the task declared it itself
        (among its outlets, dropped by :func:`drop_table_outlets`).
    :param committed_at_ms: For a result found rather than committed by this
        try, when its commit was made: the event is added only when the asset
        has none for that version since then.
    :param catalog_name: The table's name in a catalog (``uc://...``), when the
        task named it so: the asset keeps its storage URI (``table_path`` is the
        location), and the name goes in ``extra`` as ``catalog_name``.
    """
    outlet_events = context.get("outlet_events")
    version = result["version"]
    if version is None or outlet_events is None:
        return None
    uri = table_asset_uri(table_path, storage_options)
    asset: Asset | AssetRef | None = declared or declared_asset(context.get("dag"), uri)
    if asset is None and _watched(uri):
        asset = Asset.ref(uri=uri)  # it exists: a watcher stores its watermark in it
    if asset is None:
        log.debug(
            "No asset event for version %s of %s: no DAG declares an asset with URI %s here", version, table_path, uri
        )
        return None
    if committed_at_ms is not None and version in _event_versions_since(uri, committed_at_ms):
        log.info("Version %s of %s has its asset event already; none added", version, uri)
        return None
    outlet_events[alias].add(asset, extra=commit_event_extra(result, catalog_name))
    return uri


def declared_asset(dag: Any, uri: str) -> Asset | None:
    """An ``Asset`` with ``uri`` that ``dag`` declares: in a task's outlets or
    inlets, or in its schedule."""
    if dag is None:
        return None
    for asset in _dag_assets(dag):
        if isinstance(asset, Asset) and asset.uri == uri:
            return asset
    return None


def drop_table_outlets(task: Any, uri: str) -> list[Asset]:
    """Remove the ``Asset`` outlets with ``uri`` from a running ``task``; the
    ones removed. Airflow records an event for each asset outlet when the task
    succeeds; for a table's own asset that would be a second event for a
    version. Declared in the DAG, the asset is still registered, and a writer
    still names it (:func:`declared_asset`)."""
    dropped = [o for o in task.outlets if isinstance(o, Asset) and o.uri == uri]
    if dropped:
        task.outlets = [o for o in task.outlets if not (isinstance(o, Asset) and o.uri == uri)]
    return dropped


def _dag_assets(dag: Any) -> Iterable[Any]:
    for task in getattr(dag, "tasks", ()):
        yield from getattr(task, "outlets", ())
        yield from getattr(task, "inlets", ())
    condition = getattr(getattr(dag, "timetable", None), "asset_condition", None)
    if condition is not None and hasattr(condition, "iter_assets"):
        for _, asset in condition.iter_assets():
            yield asset


def _watched(uri: str) -> bool:
    """Whether an ``AssetWatcher`` keeps its watermark in the asset with ``uri``
    (a missing asset reads as no value, logged at DEBUG by Airflow)."""
    from airflow.sdk.execution_time.context import AssetStateStoreAccessor

    try:
        return AssetStateStoreAccessor(uri=uri).get(WATERMARK_KEY) is not None
    except (ImportError, AttributeError, RuntimeError):  # no supervisor: not a running task
        return False


def _event_versions_since(uri: str, committed_at_ms: int) -> list[int]:
    """The versions the asset's events name, among events added since the commit."""
    from airflow.sdk.execution_time.context import InletEventsAccessor

    from airflow_delta_provider.assets.consumer import event_versions

    since = datetime.fromtimestamp(committed_at_ms / 1000, tz=timezone.utc) - CLOCK_SKEW
    return event_versions(InletEventsAccessor(asset_uri=uri).after(since.isoformat()))


__all__ = [
    "ALIAS_PREFIX",
    "WATERMARK_KEY",
    "commit_event_extra",
    "declared_asset",
    "drop_table_outlets",
    "emit_commit_event",
    "table_alias",
]
