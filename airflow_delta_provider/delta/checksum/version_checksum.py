"""The version checksum of one table version and its JSON form.

Fields and names follow delta-spark's ``VersionChecksum`` (``Checksum.scala``)
and PROTOCOL.md: ``txnId``, ``tableSizeBytes``, ``numFiles``,
``numMetadata``, ``numProtocol``, ``inCommitTimestampOpt``,
``setTransactions``, ``domainMetadata``, ``metadata``, ``protocol``,
``fileSizeHistogram`` (older delta-spark wrote ``histogramOpt``; both are
read), ``numDeletedRecordsOpt``, ``numDeletionVectorsOpt`` and
``deletedRecordCountsHistogramOpt``. ``allFiles`` is never written (delta-spark
keeps it only for small tables, and a reader must not need it); it is
ignored when read.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from airflow_delta_provider.delta.actions.model import DomainMetadata, Metadata, Protocol, Txn
from airflow_delta_provider.delta.checksum.histograms import DeletedRecordCountsHistogram, FileSizeHistogram
from airflow_delta_provider.delta.log.store import LogStore

log = logging.getLogger(__name__)


def checksum_name(version: int) -> str:
    """The log file name of version ``version``'s checksum."""
    return f"{version:020d}.crc"


@dataclass
class VersionChecksum:
    """The state of a table at one version, as its ``.crc`` file records it.

    A None optional field is one the checksum does not know (and leaves out
    of the file); the empty state before version 0 has no metadata or protocol.
    """

    table_size_bytes: int = 0
    num_files: int = 0
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    num_metadata: int = 1
    num_protocol: int = 1
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    set_transactions: list[Txn] | None = field(default_factory=list)
    domain_metadata: list[DomainMetadata] | None = field(default_factory=list)
    file_size_histogram: FileSizeHistogram | None = field(default_factory=FileSizeHistogram)
    num_deleted_records: int | None = None
    num_deletion_vectors: int | None = None
    deleted_record_counts_histogram: DeletedRecordCountsHistogram | None = None

    def to_json(self) -> dict[str, Any]:
        assert self.metadata is not None and self.protocol is not None
        out: dict[str, Any] = {}
        if self.txn_id is not None:
            out["txnId"] = self.txn_id
        out["tableSizeBytes"] = self.table_size_bytes
        out["numFiles"] = self.num_files
        if self.num_deleted_records is not None:
            out["numDeletedRecordsOpt"] = self.num_deleted_records
        if self.num_deletion_vectors is not None:
            out["numDeletionVectorsOpt"] = self.num_deletion_vectors
        out["numMetadata"] = self.num_metadata
        out["numProtocol"] = self.num_protocol
        if self.in_commit_timestamp is not None:
            out["inCommitTimestampOpt"] = self.in_commit_timestamp
        if self.set_transactions is not None:
            out["setTransactions"] = [t.to_json() for t in self.set_transactions]
        if self.domain_metadata is not None:
            out["domainMetadata"] = [d.to_json() for d in self.domain_metadata]
        out["metadata"] = self.metadata.to_json()
        out["protocol"] = self.protocol.to_json()
        if self.file_size_histogram is not None:
            out["fileSizeHistogram"] = self.file_size_histogram.to_json()
        if self.deleted_record_counts_histogram is not None:
            out["deletedRecordCountsHistogramOpt"] = self.deleted_record_counts_histogram.to_json()
        return out

    def to_bytes(self) -> bytes:
        """The file's content: one JSON object and a newline, as delta-spark writes it."""
        return (json.dumps(self.to_json(), separators=(",", ":")) + "\n").encode()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> VersionChecksum:
        histogram = d.get("fileSizeHistogram") or d.get("histogramOpt")
        deleted = d.get("deletedRecordCountsHistogramOpt")
        txns = d.get("setTransactions")
        domains = d.get("domainMetadata")
        return cls(
            table_size_bytes=int(d["tableSizeBytes"]),
            num_files=int(d["numFiles"]),
            metadata=Metadata.from_json(d["metadata"]) if d.get("metadata") else None,
            protocol=Protocol.from_json(d["protocol"]) if d.get("protocol") else None,
            num_metadata=int(d.get("numMetadata", 1)),
            num_protocol=int(d.get("numProtocol", 1)),
            txn_id=d.get("txnId"),
            in_commit_timestamp=d.get("inCommitTimestampOpt"),
            set_transactions=[Txn.from_json(t) for t in txns] if txns is not None else None,
            domain_metadata=[DomainMetadata.from_json(x) for x in domains] if domains is not None else None,
            file_size_histogram=FileSizeHistogram.from_json(histogram) if histogram else None,
            num_deleted_records=d.get("numDeletedRecordsOpt"),
            num_deletion_vectors=d.get("numDeletionVectorsOpt"),
            deleted_record_counts_histogram=DeletedRecordCountsHistogram.from_json(deleted) if deleted else None,
        )


def read_checksum(store: LogStore, version: int) -> VersionChecksum | None:
    """Version ``version``'s checksum, or None when it is absent, empty or
    cannot be parsed: a checksum is optional, and delta-spark's
    ``readChecksum`` passes over one it cannot read the same way."""
    try:
        raw = store.read(checksum_name(version))
    except FileNotFoundError:
        return None
    try:
        line = raw.decode().strip().splitlines()
        return VersionChecksum.from_json(json.loads(line[0])) if line else None
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        log.warning("the checksum of version %d cannot be parsed, so it is not used: %r", version, exc)
        return None
