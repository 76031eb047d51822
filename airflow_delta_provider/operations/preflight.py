"""Pre-flight: what an operation checks from the log alone, before any Spark starts.

A mistyped table path, an unknown column or a missing source used to fail
after a JVM had started, 40 to 60 seconds in. Each operation's
``preflight.check(spec, storage_options)`` (dispatched by
:mod:`.runners.preflight`) reads the table's schema through the core and
refuses, in the caller's process, what Spark would refuse: the hook runs it
before spark-submit or Spark Connect, the Spark CLI before it opens a
session. It changes nothing, and refuses nothing Spark would accept: what it
cannot decide (a glob, SQL sqlglot cannot read, a store that refuses this
process) it leaves to Spark's analysis, the final word.

These are the helpers the operations' checks share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.errors import InvalidInputError, SourceNotFoundError, StorageError, TableNotFoundError
from airflow_delta_provider.delta.storage.existence import path_exists
from airflow_delta_provider.delta.storage.location import parse_location
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.sources.spec import parse_source_views

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot


def table_snapshot(table: str, storage_options: Mapping[str, str] | None) -> Snapshot:
    """The table's latest snapshot (its schema is read, not its files);
    :class:`~airflow_delta_provider.delta.errors.TableNotFoundError` when there is none."""
    return DeltaTable(table, storage_options).snapshot()


def check_sources(
    table: str,
    source: str | None,
    source_format: str | None,
    source_views: str | None,
    storage_options: Mapping[str, str] | None,
) -> None:
    """APPEND's and MERGE's source: its path, or each view's, exists, and a
    Delta one holds a table. A local source is judged only beside a local
    table, where this process sees the engine's disk (it reads the table's
    log there); elsewhere the local disk may be another machine's.

    Raises :class:`~airflow_delta_provider.delta.errors.SourceNotFoundError`
    or :class:`~airflow_delta_provider.delta.errors.TableNotFoundError`.
    """
    paths = [(source, source_format)] if source is not None else []
    paths += [(view.path, view.format) for view in parse_source_views(source_views)]
    local_table = parse_location(table).is_local
    for path, format in paths:
        _check_source(str(path), format, storage_options, local_table)


def _check_source(path: str, format: str | None, storage_options: Mapping[str, str] | None, local_ok: bool) -> None:
    try:
        local = parse_location(path).is_local
    except InvalidInputError:  # a scheme the core does not know: the engine's to read
        return
    if local and not local_ok:
        return
    found = path_exists(path, storage_options)
    if found is False:
        raise SourceNotFoundError(f"the source path {path} does not exist")
    if found and format == "delta":
        try:
            is_table = DeltaTable(path, storage_options).exists()
        except StorageError:  # the engine's credentials may reach what ours cannot
            return
        if not is_table:
            raise TableNotFoundError(f"the source {path} is not a Delta table: no commits in _delta_log")


__all__ = ["check_sources", "table_snapshot"]
