"""The asset event a writing operator emits when it commits.

An ``Asset`` among a task's outlets gets an event whenever the task
succeeds, also when it changed nothing: Airflow registers one for each
declared asset outlet. A Delta operator that committed nothing (an
idempotent retry, a MERGE or an OPTIMIZE with nothing to do) must not wake
the DAGs scheduled on its table, so each writing operator declares an
``AssetAlias`` instead (:func:`table_alias`), and adds the table's asset to
it only after a commit (:func:`emit_commit_event`), as Airflow's asset alias
guide describes for events decided at run time. Airflow then records one
event on the table's asset, with the commit in its ``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

from airflow_delta_provider.assets.uri import table_asset_uri

if TYPE_CHECKING:
    from airflow_delta_provider.hooks.delta_operation import DeltaOperationResult

#: Prefix of the alias name a writing operator declares for its table.
ALIAS_PREFIX = "delta-table:"


def table_alias(table_path: str) -> AssetAlias:
    """The alias a writing operator declares for its table (named after the
    path as written in the DAG, templates included)."""
    return AssetAlias(name=f"{ALIAS_PREFIX}{table_path}")


def commit_event_extra(result: DeltaOperationResult) -> dict[str, Any]:
    """The ``extra`` of a commit's asset event."""
    return {
        "version": result["version"],
        "operation": result["operation"],
        "table": result["table"],
        "metrics": dict(result["metrics"]),
    }


def emit_commit_event(
    outlet_events: Any,
    alias: AssetAlias,
    table_path: str,
    result: DeltaOperationResult,
    storage_options: Mapping[str, Any] | None = None,
) -> str | None:
    """Add the table's asset to ``alias`` with the commit as ``extra``; nothing
    when no version was committed. Returns the URI of the asset the event is for.

    The asset is the one registered with the table's URI when there is one
    (whatever its name), else a new asset named by its URI.
    """
    if result["version"] is None or outlet_events is None:
        return None
    from airflow.sdk.exceptions import AirflowRuntimeError

    uri = table_asset_uri(table_path, storage_options)
    accessor = outlet_events[alias]
    extra = commit_event_extra(result)
    try:
        accessor.add(Asset.ref(uri=uri), extra=extra)
    except AirflowRuntimeError:  # no asset has this URI yet
        accessor.add(Asset(uri=uri), extra=extra)
    return uri


__all__ = ["ALIAS_PREFIX", "commit_event_extra", "emit_commit_event", "table_alias"]
