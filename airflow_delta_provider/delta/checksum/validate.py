"""Comparing a version checksum with the state a snapshot reconstructed
(delta-spark's ``ValidateChecksum.checkMismatch``, PROTOCOL.md "State
Validation").

Compared: the table size, the file count, ``numMetadata`` and
``numProtocol``, the metadata and the protocol, the set transactions and
domain metadata (as sets, when the checksum lists them), the file size
histogram (when the checksum has one) and the deletion-vector counts (when
the checksum has them and the table reads deletion vectors). Compute the
state's histogram with the checksum's own bins. The in-commit
timestamp and the deleted-record histogram are not compared, as delta-spark
does not.
"""

from __future__ import annotations

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.checksum.version_checksum import VersionChecksum


def mismatches(recorded: VersionChecksum, computed: VersionChecksum) -> list[str]:
    """What ``recorded`` (the ``.crc``) says that ``computed`` (the replayed
    state) contradicts, one readable line each; empty when they agree."""
    out: list[str] = []

    def compare(title: str, expected: object, found: object) -> None:
        if expected != found:
            out.append(f"{title}: the checksum says {expected}, the log gives {found}")

    compare("table size (bytes)", recorded.table_size_bytes, computed.table_size_bytes)
    compare("number of files", recorded.num_files, computed.num_files)
    compare("metadata actions", recorded.num_metadata, computed.num_metadata)
    compare("protocol actions", recorded.num_protocol, computed.num_protocol)
    if recorded.metadata is not None:
        compare("metadata", recorded.metadata, computed.metadata)
    if recorded.protocol is not None and computed.protocol is not None:
        compare("protocol", _protocol_key(recorded.protocol), _protocol_key(computed.protocol))
    if recorded.set_transactions is not None and computed.set_transactions is not None:
        compare("set transactions", set(recorded.set_transactions), set(computed.set_transactions))
    if recorded.domain_metadata is not None and computed.domain_metadata is not None:
        compare("domain metadata", set(recorded.domain_metadata), set(computed.domain_metadata))
    a, b = recorded.file_size_histogram, computed.file_size_histogram
    if a is not None and b is not None:
        compare("file size histogram (bins)", a.boundaries, b.boundaries)
        compare("file size histogram (file counts)", a.file_counts, b.file_counts)
        compare("file size histogram (bytes)", a.total_bytes, b.total_bytes)
    if computed.num_deletion_vectors is not None and recorded.num_deletion_vectors is not None:
        compare("deletion vectors", recorded.num_deletion_vectors, computed.num_deletion_vectors)
    if computed.num_deleted_records is not None and recorded.num_deleted_records is not None:
        compare("rows deleted by deletion vectors", recorded.num_deleted_records, computed.num_deleted_records)
    return out


def _protocol_key(p: Protocol) -> tuple[int, int, frozenset[str] | None, frozenset[str] | None]:
    """A protocol, its feature lists compared as sets."""
    readers = frozenset(p.reader_features) if p.reader_features is not None else None
    writers = frozenset(p.writer_features) if p.writer_features is not None else None
    return (p.min_reader_version, p.min_writer_version, readers, writers)
