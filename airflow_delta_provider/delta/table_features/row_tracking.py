"""Row tracking (writer feature ``rowTracking``): row ids and row commit versions.

PROTOCOL.md "Row Tracking". When the protocol lists the feature (and
``delta.rowTrackingSuspended`` is not true), every new ``add`` gets

- ``baseRowId``: the first of a range of fresh row ids, one per physical row
  (``numRecords`` of its stats, which is therefore required), taken above the
  table's high-water mark; the ranges of one commit are consecutive;
- ``defaultRowCommitVersion``: the version of the commit that adds it;

and the commit carries the new high-water mark in the ``delta.rowTracking``
domain (``{"rowIdHighWaterMark": n}``). An ``add`` that re-adds a file
already carrying them (a new deletion vector, a backfill, a RESTORE) keeps
both, as the protocol asks of "recommitted" adds. The transaction does this
at commit time, again on each retry after a conflict: delta-spark's
``ConflictChecker.reassignRowIdsAndCommitVersions`` moves the fresh ranges
above the winner's high-water mark and the versions to the new attempt; here
they are computed anew from the staged actions, which gives the same result.

With ``delta.enableRowTracking`` the rows keep *stable* ids: a row copied to
a new file (UPDATE, DELETE, MERGE, OPTIMIZE) carries its id, and its commit
version unless it was updated, in the hidden *materialized* columns named in
the table configuration. Those columns are the Spark engine's business; here
they are only named (as delta-spark names them) when the feature is enabled,
and each commit says in the commitInfo tag ``delta.rowTracking.preserved``
whether it kept them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddFile, DomainMetadata, Metadata, Protocol
from airflow_delta_provider.delta.errors import CorruptLogError, InvalidInputError
from airflow_delta_provider.delta.table_features.column_mapping import ColumnMapping
from airflow_delta_provider.delta.table_features.features import ROW_TRACKING

DOMAIN = "delta.rowTracking"
#: The high-water mark of a table that never assigned a row id.
MISSING_HIGH_WATER_MARK = -1
#: The commitInfo tag saying whether a commit kept the stable row ids and versions it copied.
PRESERVED_TAG = "delta.rowTracking.preserved"
#: The table properties naming the materialized columns.
MATERIALIZED_KEYS = (
    table_properties.MATERIALIZED_ROW_ID_COLUMN,
    table_properties.MATERIALIZED_ROW_COMMIT_VERSION_COLUMN,
)
_MATERIALIZED_PREFIXES = ("_row-id-col-", "_row-commit-version-col-")
A = TypeVar("A")  # a file action: add, remove or cdc


def is_supported(protocol: Protocol) -> bool:
    """Whether ``protocol`` lists the ``rowTracking`` writer feature."""
    return ROW_TRACKING in (protocol.writer_features or ())


def is_required(metadata: Metadata) -> bool:
    """Whether ``delta.enableRowTracking`` asks for the feature (and for
    ``domainMetadata``: the high-water mark is a domain)."""
    return table_properties.row_tracking_enabled(metadata)


def assigns_row_ids(protocol: Protocol, metadata: Metadata | None) -> bool:
    """Whether a commit under ``protocol`` and ``metadata`` must give new adds
    row ids: the feature is supported and not suspended."""
    return is_supported(protocol) and not (metadata is not None and table_properties.row_tracking_suspended(metadata))


def high_water_mark(domains: Mapping[str, DomainMetadata] | Iterable[DomainMetadata]) -> int:
    """The ``rowIdHighWaterMark`` of the ``delta.rowTracking`` domain among
    ``domains`` (a snapshot's by name, or a commit's actions), or -1."""
    found = domains.get(DOMAIN) if isinstance(domains, Mapping) else None
    if not isinstance(domains, Mapping):
        found = next((d for d in domains if d.domain == DOMAIN and not d.removed), None)
    if found is None or found.removed:
        return MISSING_HIGH_WATER_MARK
    try:
        return int(json.loads(found.configuration)["rowIdHighWaterMark"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptLogError(f"unreadable {DOMAIN} domain configuration {found.configuration!r}") from exc


def domain_action(mark: int) -> DomainMetadata:
    """The ``domainMetadata`` action recording high-water mark ``mark``."""
    return DomainMetadata(DOMAIN, json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":")))


def assign(actions: Iterable[A], mark: int, version: int) -> tuple[list[A], int]:
    """``actions`` with row ids and commit versions for the commit at
    ``version`` over a table whose high-water mark is ``mark``, and the new
    mark. An add without ``baseRowId`` gets the next free range (its
    ``numRecords`` rows; an add without them is an InvalidInputError); one
    without ``defaultRowCommitVersion`` gets ``version``. Removes, ``cdc``
    files and adds that have both are kept as they are."""
    out: list[A] = []
    for a in actions:
        if isinstance(a, AddFile) and (a.base_row_id is None or a.default_row_commit_version is None):
            base = a.base_row_id
            if base is None:
                rows = a.num_records
                if rows is None:
                    raise InvalidInputError(
                        f"add {a.path} has no numRecords statistic: a table with row tracking needs it "
                        "to give the file's rows their ids"
                    )
                base = mark + 1
                mark += rows
            commit_version = version if a.default_row_commit_version is None else a.default_row_commit_version
            a = replace(a, base_row_id=base, default_row_commit_version=commit_version)
        out.append(a)
    return out, mark


def materialized_columns(metadata: Metadata) -> tuple[str, str] | None:
    """The names of the materialized row id and row commit version columns,
    or None when the table does not name both."""
    names = tuple(metadata.configuration.get(k) for k in MATERIALIZED_KEYS)
    return (names[0], names[1]) if names[0] and names[1] else None


def enabled(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether rows keep stable ids: the property is on, the feature listed
    and the materialized columns named."""
    return (
        table_properties.row_tracking_enabled(metadata)
        and is_supported(protocol)
        and materialized_columns(metadata) is not None
    )


def with_materialized_names(metadata: Metadata, previous: Metadata | None) -> Metadata:
    """``metadata`` keeping the materialized column names ``previous`` gave
    (they may never change, PROTOCOL.md), and naming them as delta-spark does
    (``_row-id-col-<uuid>``, ``_row-commit-version-col-<uuid>``) when the
    table turns row tracking on. A name the table already uses as a column is
    an InvalidInputError."""
    configuration = dict(metadata.configuration)
    for key, prefix in zip(MATERIALIZED_KEYS, _MATERIALIZED_PREFIXES):
        if previous is not None and previous.configuration.get(key):
            configuration[key] = previous.configuration[key]
        elif table_properties.row_tracking_enabled(metadata) and not configuration.get(key):
            configuration[key] = f"{prefix}{uuid.uuid4()}"
    if configuration == dict(metadata.configuration):
        result = metadata
    else:
        result = replace(metadata, configuration=configuration)
    names = materialized_columns(result)
    if names is not None:
        _check_distinct(result, names)
    return result


def _check_distinct(metadata: Metadata, names: tuple[str, str]) -> None:
    fields = metadata.schema_json.get("fields", ())
    taken = {f["name"].lower() for f in fields}
    mapping = ColumnMapping.of(metadata.schema_json, metadata.configuration)
    if mapping.enabled:
        taken |= {mapping.physical_column(f["name"]).lower() for f in fields}
    clash = sorted(n for n in names if n.lower() in taken)
    if clash or names[0].lower() == names[1].lower():
        raise InvalidInputError(
            f"the materialized row tracking column name(s) {clash or [names[0]]} clash with the table's columns"
        )


def backfill(files: Iterable[AddFile]) -> list[AddFile]:
    """The re-adds (``dataChange=false``) that give ``files`` lacking a
    ``baseRowId`` their row ids, as delta-spark's row tracking backfill
    commits them before a table turns row tracking on."""
    return [
        replace(f, data_change=False, base_row_id=None, default_row_commit_version=None)
        for f in files
        if f.base_row_id is None
    ]


__all__ = [
    "DOMAIN",
    "MATERIALIZED_KEYS",
    "MISSING_HIGH_WATER_MARK",
    "PRESERVED_TAG",
    "assign",
    "assigns_row_ids",
    "backfill",
    "domain_action",
    "enabled",
    "high_water_mark",
    "is_required",
    "is_supported",
    "materialized_columns",
    "with_materialized_names",
]
