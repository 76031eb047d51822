"""Deriving a version checksum: from a table state, or incrementally from
the previous version's checksum and one commit's actions.

:func:`advance` follows delta-spark's ``RecordChecksum.computeNewChecksum``:
each ``add`` adds its size (to the total, the file count and the size
histogram), each ``remove`` subtracts the size it carries (a remove without
one makes the checksum underivable, as delta-spark's
``ENCOUNTERED_REMOVE_FILE_MISSING_SIZE``); the last protocol and metadata
win; ``txn`` and ``domainMetadata`` replay over the previous lists, which are
kept only up to 100 and 10 entries; deletion-vector counts are kept when the
table writes deletion vectors, or reads them and the previous checksum had
the counts. Operations that re-add live files (``COMPUTE STATS``, the row
tracking backfills, ``DROP FEATURE``) do not count their adds, and
``Deletion Vector Tombstones`` does not count its removes.

:func:`of_state` is delta-spark's ``Snapshot.computeChecksum`` on a
reconciled state.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.checksum.histograms import (
    DEFAULT_BINS,
    DeletedRecordCountsHistogram,
    FileSizeHistogram,
)
from airflow_delta_provider.delta.checksum.version_checksum import VersionChecksum
from airflow_delta_provider.delta.table_features import deletion_vectors
from airflow_delta_provider.delta.table_features.features import DELETION_VECTORS, listed_features

_T = TypeVar("_T", Txn, DomainMetadata)

#: delta-spark's ``DELTA_MAX_SET_TRANSACTIONS_IN_CRC`` and ``DELTA_MAX_DOMAIN_METADATAS_IN_CRC``.
MAX_SET_TRANSACTIONS = 100
MAX_DOMAIN_METADATA = 10

#: ``RecordChecksum.operationNamesWhereAddFilesIgnoredForIncrementalCrc``.
ADDS_IGNORED = frozenset({"COMPUTE STATS", "ROW TRACKING BACKFILL", "ROW TRACKING UNBACKFILL", "DROP FEATURE"})
#: ``RecordChecksum.operationNamesWhereRemoveFilesIgnoredForIncrementalCrc``.
REMOVES_IGNORED = frozenset({"Deletion Vector Tombstones"})


def reads_deletion_vectors(protocol: Protocol, metadata: Metadata) -> bool:
    """delta-spark's ``deletionVectorsReadable``: the protocol lists the
    feature and the data is parquet."""
    return DELETION_VECTORS in listed_features(protocol)[0] and metadata.format.provider == "parquet"


def empty() -> VersionChecksum:
    """The state before version 0: no files, no metadata, no protocol."""
    return VersionChecksum(
        num_deleted_records=0,
        num_deletion_vectors=0,
        deleted_record_counts_histogram=DeletedRecordCountsHistogram(),
    )


def _txns_expire(metadata: Metadata) -> bool:
    """Whether the table drops old ``txn`` actions (``delta.setTransactionRetentionDuration``): then
    the checksum records no set transactions, as delta-spark's ``Checksum`` does (which ones are
    live depends on the clock)."""
    return table_properties.set_transaction_retention_ms(metadata) is not None


def of_state(
    protocol: Protocol,
    metadata: Metadata,
    txns: Iterable[Txn],
    domains: Iterable[DomainMetadata],
    sizes: Sequence[int],
    deleted_per_file: Sequence[int],
    histogram_bins: tuple[int, ...] = DEFAULT_BINS,
) -> VersionChecksum:
    """The checksum of a reconciled state: its live files' sizes and the rows
    each one's deletion vector hides (0 without one; only needed when the
    table reads deletion vectors), the sizes counted in ``histogram_bins``."""
    txn_list = list(txns)
    domain_list = [d for d in domains if not d.removed]
    dv = reads_deletion_vectors(protocol, metadata)
    return VersionChecksum(
        table_size_bytes=sum(sizes),
        num_files=len(sizes),
        metadata=metadata,
        protocol=protocol,
        set_transactions=txn_list if len(txn_list) <= MAX_SET_TRANSACTIONS and not _txns_expire(metadata) else None,
        domain_metadata=domain_list if len(domain_list) <= MAX_DOMAIN_METADATA else None,
        file_size_histogram=FileSizeHistogram.of(sizes, histogram_bins),
        num_deleted_records=sum(deleted_per_file) if dv else None,
        num_deletion_vectors=sum(1 for n in deleted_per_file if n) if dv else None,
        deleted_record_counts_histogram=DeletedRecordCountsHistogram.of(deleted_per_file) if dv else None,
    )


def advance(
    previous: VersionChecksum,
    actions: Iterable[Action],
    *,
    operation: str,
    live_paths: Collection[str] | None = None,
    canonical: Callable[[str], str] = str,
) -> VersionChecksum | None:
    """The checksum after committing ``actions`` on top of ``previous`` (the
    checksum of the version before), or None when it cannot be derived.

    An ``add`` of a file that is already live (and not removed by the same
    commit) replaces it and changes no count. ``live_paths`` (the previous
    version's live files, as ``canonical`` spells them) tells those re-adds
    apart; without it a ``dataChange=false`` add that the commit does not
    pair with a remove may be one, so nothing is derived rather than a
    wrong count.
    """
    actions = list(actions)
    removed = {canonical(a.path) for a in actions if isinstance(a, RemoveFile)}
    readds: set[int] = set()
    for i, a in enumerate(actions):
        if isinstance(a, AddFile) and canonical(a.path) not in removed:
            if live_paths is None:
                if not a.data_change:
                    return None
            elif canonical(a.path) in live_paths:
                readds.add(i)
    protocol = next((a for a in actions if isinstance(a, Protocol)), previous.protocol)
    metadata = next((a for a in actions if isinstance(a, Metadata)), previous.metadata)
    if protocol is None or metadata is None:
        return None
    first_version = previous.metadata is None
    count_dvs = deletion_vectors.writes_deletion_vectors(protocol, metadata) or (
        reads_deletion_vectors(protocol, metadata) and previous.num_deletion_vectors is not None and not first_version
    )
    size, files = previous.table_size_bytes, previous.num_files
    histogram = previous.file_size_histogram.copy() if previous.file_size_histogram is not None else None
    deleted = previous.num_deleted_records if count_dvs else None
    dvs = previous.num_deletion_vectors if count_dvs else None
    deleted_histogram = previous.deleted_record_counts_histogram if count_dvs else None
    deleted_histogram = deleted_histogram.copy() if deleted_histogram is not None else None
    ict: int | None = None
    sign_of = {AddFile: 1, RemoveFile: -1}
    for i, a in enumerate(actions):
        if isinstance(a, CommitInfo):
            ict = a.raw.get("inCommitTimestamp")
        if not isinstance(a, (AddFile, RemoveFile)):
            continue
        if (
            i in readds
            or (operation in ADDS_IGNORED and isinstance(a, AddFile))
            or (operation in REMOVES_IGNORED and isinstance(a, RemoveFile))
        ):
            continue
        if a.size is None:
            return None
        sign = sign_of[type(a)]
        size += sign * a.size
        files += sign
        cardinality = a.deletion_vector.cardinality if a.deletion_vector is not None else 0
        if histogram is not None:
            (histogram.insert if sign > 0 else histogram.remove)(a.size)
        if deleted is not None:
            deleted += sign * cardinality
        if dvs is not None:
            dvs += sign * (a.deletion_vector is not None)
        if deleted_histogram is not None:
            (deleted_histogram.insert if sign > 0 else deleted_histogram.remove)(cardinality)
    return VersionChecksum(
        table_size_bytes=size,
        num_files=files,
        metadata=metadata,
        protocol=protocol,
        in_commit_timestamp=ict,
        set_transactions=(
            None
            if _txns_expire(metadata) or (previous.metadata is not None and _txns_expire(previous.metadata))
            else _replayed(previous.set_transactions, actions, Txn, MAX_SET_TRANSACTIONS)
        ),
        domain_metadata=_replayed(previous.domain_metadata, actions, DomainMetadata, MAX_DOMAIN_METADATA),
        file_size_histogram=histogram,
        num_deleted_records=deleted,
        num_deletion_vectors=dvs,
        deleted_record_counts_histogram=deleted_histogram,
    )


def _replayed(previous: list[_T] | None, actions: list[Action], kind: type[_T], limit: int) -> list[_T] | None:
    """``previous`` (txns by app id, or domains by name) with the commit's
    actions of that kind replayed over it; None when unknown or over ``limit``."""
    if previous is None:
        return None
    by_key = {_key(x): x for x in previous}
    for a in actions:
        if isinstance(a, kind):
            if isinstance(a, DomainMetadata) and a.removed:
                by_key.pop(a.domain, None)
            else:
                by_key[_key(a)] = a
    out = list(by_key.values())
    return out if len(out) <= limit else None


def _key(a: Txn | DomainMetadata) -> str:
    return a.app_id if isinstance(a, Txn) else a.domain
