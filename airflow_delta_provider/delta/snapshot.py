"""An immutable view of a table at one version.

A :class:`Snapshot` is built by replaying a log segment (the newest
checkpoint plus the commits after it). It exposes what readers and writers
need: protocol, metadata, schema, the live files, unexpired tombstones and the
``txn`` versions. Loading it runs the reader protocol gate, so nothing is
read from a table whose features we do not implement.

Loading reads the commits and the checkpoint's small actions (protocol,
metadata, ``txn``, domains) and the checkpoint's footers; its file actions,
most of a large checkpoint, are read on first use, as delta-spark's
``DeltaLog.update()`` and delta-kernel-rs's snapshot do. A sensor or a
protocol check then pays for what it uses.
"""

from __future__ import annotations

import json
import threading
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_commit,
)
from airflow_delta_provider.delta.checksum import derive
from airflow_delta_provider.delta.checksum.histograms import DEFAULT_BINS
from airflow_delta_provider.delta.checksum.validate import mismatches
from airflow_delta_provider.delta.checksum.version_checksum import VersionChecksum, read_checksum
from airflow_delta_provider.delta.errors import CorruptLogError
from airflow_delta_provider.delta.log.checkpoint_reader import CheckpointFileActions, apply_checkpoint_state
from airflow_delta_provider.delta.log.replay import FileState, LogReplay
from airflow_delta_provider.delta.log.segment import LogSegment
from airflow_delta_provider.delta.log.store import LogFile, LogStore, commit_name
from airflow_delta_provider.delta.table_features import gate as features
from airflow_delta_provider.delta.table_features import in_commit_timestamps
from airflow_delta_provider.delta.table_features.column_mapping import NONE as NO_MAPPING
from airflow_delta_provider.delta.table_features.column_mapping import ColumnMapping
from airflow_delta_provider.delta.table_features.features import listed_features

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa
    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader
    from airflow_delta_provider.delta.scan.skipping import Predicate


class Snapshot:
    """The state of a table at :attr:`version`."""

    def __init__(
        self,
        store: LogStore,
        segment: LogSegment,
        replay: LogReplay,
        timestamp: int,
        checkpoint_files: CheckpointFileActions | None = None,
    ) -> None:
        self._store = store
        self.segment = segment
        self.version = segment.version
        self.timestamp = timestamp
        if replay.protocol is None:
            raise CorruptLogError(f"cannot reconstruct version {segment.version}: the log has no protocol action")
        if replay.metadata is None:
            raise CorruptLogError(f"cannot reconstruct version {segment.version}: the log has no metaData action")
        self.protocol: Protocol = replay.protocol
        self.metadata: Metadata = replay.metadata
        features.check_readable(self.protocol, self.metadata)
        self._txns = _unexpired_txns(replay.txns, self.metadata)
        self.domain_metadata: dict[str, DomainMetadata] = dict(replay.domains)
        self._replay: LogReplay | None = replay
        self._checkpoint_files = checkpoint_files
        self._files_lock = threading.Lock()
        self._files_state: FileState | None = None

    @classmethod
    def load(cls, store: LogStore, segment: LogSegment, timestamp: int | None = None) -> Snapshot:
        replay = LogReplay(store.table_root)
        checkpoint_files = apply_checkpoint_state(store, segment.checkpoint_files, replay)
        last_info: CommitInfo | None = None
        for commit in segment.commits:
            try:
                actions = list(parse_commit(store.read(commit.name)))
            except FileNotFoundError as exc:
                raise CorruptLogError(f"commit {commit.name} disappeared while reading the log") from exc
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptLogError(f"commit {commit.name} cannot be parsed: {exc!r}") from exc
            replay.apply(actions)
            last_info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        if timestamp is None:
            timestamp = _in_commit_time(replay, last_info) or _commit_time(store, segment)
        return cls(store, segment, replay, timestamp, checkpoint_files)

    def after_empty_commit(self, commit: LogFile) -> Snapshot:
        """This table at ``commit``, the version right after this one, when
        that commit changed no state (only a ``commitInfo``: a marker such as
        VACUUM START), without reading the log again.

        The state is this snapshot's, shared: its files must be loaded
        already. ``commit`` is the commit's file; its ``mtime_ms`` becomes the
        version's time (exact from a listing; from the writer's clock when the
        caller just wrote it, see
        :func:`~airflow_delta_provider.delta.transaction.post_commit.snapshot_of`)."""
        if commit.version != self.version + 1 or commit.kind != "commit":
            raise ValueError(f"{commit.name} does not follow version {self.version}")
        state = self._files_state
        if state is None:
            raise ValueError("the files of the snapshot are not loaded")
        segment = LogSegment(
            version=commit.version,
            checkpoint_version=self.segment.checkpoint_version,
            checkpoint_files=self.segment.checkpoint_files,
            commits=(*self.segment.commits, commit),
        )
        after = object.__new__(Snapshot)
        after._store = self._store
        after.segment = segment
        after.version = commit.version
        after.timestamp = commit.mtime_ms
        after.protocol = self.protocol
        after.metadata = self.metadata
        after._txns = self._txns
        after.domain_metadata = dict(self.domain_metadata)
        after._replay = after._checkpoint_files = None
        after._files_lock = threading.Lock()
        after._files_state = state
        for name in _SAME_AFTER_EMPTY_COMMIT:  # what this snapshot worked out already
            if name in self.__dict__:
                after.__dict__[name] = self.__dict__[name]
        return after

    # --- table identity -------------------------------------------------------

    @property
    def table_root(self) -> str:
        return self._store.table_root

    @property
    def log_store(self) -> LogStore:
        return self._store

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The table schema as Delta schema JSON."""
        return json.loads(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    # --- files ---------------------------------------------------------------

    @property
    def _file_state(self) -> FileState:
        """The reconciled files, reading the checkpoint's file actions the first time."""
        if self._files_state is None:
            with self._files_lock:
                if self._files_state is None:
                    assert self._replay is not None
                    if self._checkpoint_files is not None:
                        self._checkpoint_files.apply(self._replay)
                    state = self._replay.finish()
                    self._check_against_checksum(state)
                    self._files_state = state
                    self._replay = self._checkpoint_files = None
        return self._files_state

    @property
    def files_loaded(self) -> bool:
        """Whether the live files are already reconciled (so :meth:`checksum` is cheap)."""
        return self._files_state is not None

    def checksum(self) -> VersionChecksum:
        """This version's checksum, computed from its reconciled state
        (delta-spark's ``Snapshot.computeChecksum``); reads the files' actions
        when they are not loaded yet."""
        return self._state_checksum(self._file_state)

    def _state_checksum(self, state: FileState, histogram_bins: tuple[int, ...] = DEFAULT_BINS) -> VersionChecksum:
        return derive.of_state(
            self.protocol,
            self.metadata,
            self._txns.values(),
            self.domain_metadata.values(),
            state.sizes(),
            state.deleted_row_counts() if derive.reads_deletion_vectors(self.protocol, self.metadata) else [],
            histogram_bins,
        )

    def _check_against_checksum(self, state: FileState) -> None:
        """Compare the reconciled state with the version's ``.crc`` when the
        listing found one (PROTOCOL.md "State Validation"); a mismatch is a
        :class:`CorruptLogError` naming the version."""
        if self.segment.checksum is None:
            return
        recorded = read_checksum(self._store, self.version)
        if recorded is None:
            return
        bins = recorded.file_size_histogram.boundaries if recorded.file_size_histogram is not None else DEFAULT_BINS
        problems = mismatches(recorded, self._state_checksum(state, bins))
        if problems:
            raise CorruptLogError(
                f"version {self.version} of {self.table_root} does not match its checksum "
                f"{self.segment.checksum.name}: " + "; ".join(problems)
            )

    @cached_property
    def files(self) -> list[AddFile]:
        """The live data files."""
        return self._file_state.add_files()

    def file_paths(self) -> list[str]:
        """The log paths of the live files; cheaper than :attr:`files`."""
        if "files" in self.__dict__:
            return [f.path for f in self.files]
        return self._file_state.paths()

    def add_table(self, partition_keys: Sequence[str] = ()) -> pa.Table:
        """The live files as arrow columns (see :meth:`FileState.add_table`);
        cheap on a large checkpoint, where :attr:`files` builds an object per file."""
        return self._file_state.add_table(partition_keys)

    @property
    def num_files(self) -> int:
        return self._file_state.num_files

    @cached_property
    def all_tombstones(self) -> list[RemoveFile]:
        """Every remove not cancelled by a re-add, expired or not."""
        return self._file_state.remove_files()

    @cached_property
    def tombstones(self) -> list[RemoveFile]:
        """Removes still within ``delta.deletedFileRetentionDuration``."""
        cutoff = int(time.time() * 1000) - table_properties.deleted_file_retention_ms(self.metadata)
        return [r for r in self.all_tombstones if (r.deletion_timestamp or 0) > cutoff]

    @cached_property
    def size_in_bytes(self) -> int:
        return self._file_state.size_in_bytes

    @cached_property
    def num_records(self) -> int | None:
        """Live rows in the table (each file's ``numRecords`` minus the rows its
        deletion vector hides), when every live file has ``numRecords`` stats."""
        total = 0
        for f in self.files:
            n = f.num_live_records
            if n is None:
                return None
            total += n
        return total

    def files_matching(self, predicate: Predicate | str | None) -> list[AddFile]:
        """Live files that may hold rows matching ``predicate`` (by partition
        values and min/max/nullCount stats); every file when it is None."""
        if predicate is None:
            return self.files
        from airflow_delta_provider.delta.scan.skipping import Predicate, prune_files

        if isinstance(predicate, str):
            predicate = Predicate.parse(predicate)
        return prune_files(
            self.files, predicate, self.schema, self.partition_columns, mapping_mode=self.column_mapping.mode
        )

    @cached_property
    def column_mapping(self) -> ColumnMapping:
        """How this version maps logical column names onto its data files.

        The mode is honoured only when the protocol supports column mapping
        (reader 2, or the reader feature), as PROTOCOL.md asks."""
        readers, _writers = listed_features(self.protocol)
        if "columnMapping" not in readers:
            return ColumnMapping(NO_MAPPING, self.schema)
        return ColumnMapping.of(self.schema, self.configuration)

    @cached_property
    def deletion_vector_reader(self) -> DeletionVectorReader:
        """Reads the deletion vectors of this table, each DV file once."""
        from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorReader

        return DeletionVectorReader(self._store.storage)

    def deleted_rows(self, add: AddFile) -> BitMap64 | None:
        """The row indexes ``add``'s deletion vector hides; None without one.

        Raises :class:`~airflow_delta_provider.delta.errors.CorruptDeletionVectorError`
        naming the DV file when it is missing or damaged.
        """
        if add.deletion_vector is None:
            return None
        return self.deletion_vector_reader.read(add.deletion_vector, add.path)

    def file_path(self, add: AddFile | RemoveFile) -> str:
        """The filesystem path of a data file of this table."""
        from airflow_delta_provider.delta.partitions import to_absolute

        return to_absolute(self.table_root, add.path)

    # --- transactions ----------------------------------------------------------

    def txn_version(self, app_id: str) -> int | None:
        """The last version committed by application ``app_id``, if any."""
        txn = self._txns.get(app_id)
        return txn.version if txn is not None else None

    @property
    def txns(self) -> dict[str, int]:
        """The last version of every application that recorded a ``txn``."""
        return {k: v.version for k, v in self._txns.items()}

    @property
    def txn_actions(self) -> list[Txn]:
        return list(self._txns.values())

    def __repr__(self) -> str:
        return f"Snapshot(table={self.table_root!r}, version={self.version}, files={self.num_files})"


#: The cached properties :meth:`Snapshot.after_empty_commit` keeps: they
#: depend on the state alone, which a commit with no actions leaves as it was.
_SAME_AFTER_EMPTY_COMMIT = ("schema", "files", "all_tombstones", "size_in_bytes", "num_records", "column_mapping")


def _unexpired_txns(txns: dict[str, Txn], metadata: Metadata) -> dict[str, Txn]:
    """``txns`` without those older than ``delta.setTransactionRetentionDuration``: delta-spark's
    ``InMemoryLogReplay.getTransactions`` drops a ``txn`` whose ``lastUpdated`` is missing or not
    after ``now - retention``, so neither the snapshot nor its checkpoint keeps it."""
    retention = table_properties.set_transaction_retention_ms(metadata)
    if retention is None or not txns:
        return txns
    cutoff = int(time.time() * 1000) - retention
    return {k: t for k, t in txns.items() if t.last_updated is not None and t.last_updated > cutoff}


def _in_commit_time(replay: LogReplay, info: CommitInfo | None) -> int | None:
    """The version's in-commit timestamp, when the table has them on and its
    commit was read: the version's time, not the file's (PROTOCOL.md)."""
    if info is None or replay.protocol is None or replay.metadata is None:
        return None
    if in_commit_timestamps.enabled_since(replay.protocol, replay.metadata) is None:
        return None
    return in_commit_timestamps.carried_by(info)


def _commit_time(store: LogStore, segment: LogSegment) -> int:
    """When the segment's version was committed: the mtime of its ``N.json``.

    With no commit after the checkpoint, the commit file may still exist (a
    checkpoint written later must not move the version's time); only when
    it was cleaned up does the checkpoint's own mtime stand in.
    """
    if segment.last_commit is not None:
        return segment.last_commit.mtime_ms
    try:
        return store.mtime_ms(commit_name(segment.version))
    except FileNotFoundError:
        return segment.checkpoint_files[0].mtime_ms if segment.checkpoint_files else 0
