"""The health report of a table, from one snapshot and the log's recent history.

Everything is read from ``_delta_log`` (commits, checkpoint, ``_last_vacuum_info``);
no data file is opened. The live files are aggregated as arrow columns
(:meth:`~airflow_delta_provider.delta.snapshot.Snapshot.add_table`), so a
table of 100,000 files is measured without building 100,000 objects.

:meth:`HealthReport.to_dict` is the JSON document the CLI prints and the
operators return as XCom (camelCase, times in milliseconds since the epoch,
ages in seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.checksum.histograms import FileSizeHistogram
from airflow_delta_provider.delta.errors import VacuumLiteUnavailableError
from airflow_delta_provider.delta.health.history import recent_versions
from airflow_delta_provider.delta.log.commit_summary import VersionInfo
from airflow_delta_provider.delta.log.last_vacuum_info import lite_commit_range, read_last_vacuum_info
from airflow_delta_provider.delta.log.store import LogFile, LogStore
from airflow_delta_provider.delta.schema.types import format_path
from airflow_delta_provider.delta.table_features.clustering import clustering_columns
from airflow_delta_provider.delta.table_properties import target_file_size

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable

_MB = 1024 * 1024
#: The file-size histogram's bins (inclusive lower bounds): coarse enough to read at a glance.
SIZE_BINS: tuple[int, ...] = (
    0,
    64 * 1024,
    _MB,
    8 * _MB,
    32 * _MB,
    64 * _MB,
    128 * _MB,
    256 * _MB,
    512 * _MB,
    1024 * _MB,
)
#: How many of the newest commits are read for the last OPTIMIZE and VACUUM and the versions chart.
HISTORY_LIMIT = 200
#: The operations that count as an OPTIMIZE (compaction, Z-order, clustering) and as a completed VACUUM.
OPTIMIZE_OPERATIONS = frozenset({"OPTIMIZE"})
VACUUM_OPERATIONS = frozenset({"VACUUM END"})
#: At most this many commits since the last vacuum are read for their ``remove`` actions (the oldest first).
MAX_REMOVE_COMMITS = 1000


@dataclass(frozen=True)
class PartitionHealth:
    """The live files of one partition (of the whole table when it has no partition columns)."""

    values: dict[str, str | None]
    num_files: int
    size_in_bytes: int
    num_small_files: int
    #: Rows in the files (``numRecords`` stats), deleted ones included; None when a file lacks stats.
    num_records: int | None
    num_deleted_records: int
    num_clustered_files: int

    @property
    def deleted_row_share(self) -> float:
        return self.num_deleted_records / self.num_records if self.num_records else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitionValues": self.values,
            "numFiles": self.num_files,
            "sizeInBytes": self.size_in_bytes,
            "numSmallFiles": self.num_small_files,
            "numRecords": self.num_records,
            "numDeletedRecords": self.num_deleted_records,
            "deletedRowShare": self.deleted_row_share,
        }


@dataclass(frozen=True)
class HealthReport:
    """What a table's log says about its upkeep, at one version."""

    table: str
    version: int
    timestamp: int
    generated_at: int
    partition_columns: list[str]
    target_file_size: int
    small_file_size: int
    partitions: list[PartitionHealth]
    #: Files per bin of :data:`SIZE_BINS`.
    size_histogram: list[int]
    checkpoint_version: int | None
    checkpoint_interval: int
    last_optimize: VersionInfo | None
    last_vacuum: VersionInfo | None
    num_tombstones: int
    tombstoned_bytes: int
    #: Bytes of removed files past the retention that VACUUM would still find: the
    #: snapshot's tombstones and the ``remove`` actions of the commits since the last vacuum.
    vacuumable_bytes: int
    deleted_file_retention_ms: int
    vacuum_lite_available: bool
    clustering_columns: list[str]
    #: Files removed since the last vacuum, of any age, that are not live again (0: nothing to vacuum).
    num_pending_removes: int = 0
    #: Newest first.
    history: list[VersionInfo] = field(default_factory=list)

    # --- totals -------------------------------------------------------------------

    @property
    def num_files(self) -> int:
        return sum(p.num_files for p in self.partitions)

    @property
    def size_in_bytes(self) -> int:
        return sum(p.size_in_bytes for p in self.partitions)

    @property
    def num_small_files(self) -> int:
        return sum(p.num_small_files for p in self.partitions)

    @property
    def small_file_share(self) -> float:
        """The share of live files smaller than :attr:`small_file_size`."""
        return self.num_small_files / self.num_files if self.num_files else 0.0

    @property
    def num_records(self) -> int | None:
        counts = [p.num_records for p in self.partitions]
        return None if any(n is None for n in counts) else sum(n for n in counts if n is not None)

    @property
    def num_deleted_records(self) -> int:
        return sum(p.num_deleted_records for p in self.partitions)

    @property
    def deleted_row_share(self) -> float:
        """The share of the files' rows that deletion vectors hide."""
        total = self.num_records
        return self.num_deleted_records / total if total else 0.0

    @property
    def commits_since_checkpoint(self) -> int:
        return self.version - (self.checkpoint_version if self.checkpoint_version is not None else -1)

    @property
    def clustering_coverage(self) -> float | None:
        """The share of live files written by clustering; None on a table that is not clustered."""
        if not self.clustering_columns:
            return None
        clustered = sum(p.num_clustered_files for p in self.partitions)
        return clustered / self.num_files if self.num_files else 1.0

    def age_seconds(self, info: VersionInfo | None) -> float | None:
        if info is None or info.timestamp is None:
            return None
        return max(0.0, (self.generated_at - info.timestamp) / 1000)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serialisable data (the CLI's and the operators' document)."""

        def when(info: VersionInfo | None) -> dict[str, Any] | None:
            return None if info is None else {**info.to_dict(), "ageSeconds": self.age_seconds(info)}

        return {
            "table": self.table,
            "version": self.version,
            "timestamp": self.timestamp,
            "generatedAt": self.generated_at,
            "partitionColumns": self.partition_columns,
            "numFiles": self.num_files,
            "sizeInBytes": self.size_in_bytes,
            "targetFileSize": self.target_file_size,
            "smallFileSize": self.small_file_size,
            "numSmallFiles": self.num_small_files,
            "smallFileShare": self.small_file_share,
            "numRecords": self.num_records,
            "numDeletedRecords": self.num_deleted_records,
            "deletedRowShare": self.deleted_row_share,
            "checkpointVersion": self.checkpoint_version,
            "checkpointInterval": self.checkpoint_interval,
            "commitsSinceCheckpoint": self.commits_since_checkpoint,
            "lastOptimize": when(self.last_optimize),
            "lastVacuum": when(self.last_vacuum),
            "numTombstones": self.num_tombstones,
            "tombstonedBytes": self.tombstoned_bytes,
            "vacuumableBytes": self.vacuumable_bytes,
            "numPendingRemoves": self.num_pending_removes,
            "deletedFileRetentionMs": self.deleted_file_retention_ms,
            "vacuumLiteAvailable": self.vacuum_lite_available,
            "clusteringColumns": self.clustering_columns,
            "clusteringCoverage": self.clustering_coverage,
            "fileSizeHistogram": {"boundaries": list(SIZE_BINS), "fileCounts": self.size_histogram},
            "partitions": [p.to_dict() for p in self.partitions],
            "history": [v.to_dict() for v in self.history],
        }


def health_report(
    table: DeltaTable,
    snapshot: Snapshot | None = None,
    *,
    small_file_size: int | None = None,
    now_ms: int | None = None,
    history_limit: int = HISTORY_LIMIT,
) -> HealthReport:
    """Measure ``snapshot`` (default: the latest) of ``table``.

    A file is small below ``small_file_size`` bytes (default: half the target
    size, ``delta.targetFileSize`` or 128 MiB, as delta-spark's auto
    compaction's ``minFileSize`` is half its ``maxFileSize``). VACUUM would free
    the bytes of the files removed before ``delta.deletedFileRetentionDuration``
    at ``now_ms``: the snapshot's tombstones, and the ``remove`` actions of the
    commits since the last vacuum (the range VACUUM LITE reads, at most
    :data:`MAX_REMOVE_COMMITS` of them), because a checkpoint keeps only the
    unexpired tombstones. The last OPTIMIZE and VACUUM are looked for among the
    newest ``history_limit`` commits.
    """
    snapshot = snapshot or table.snapshot()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    md = snapshot.metadata
    target = target_file_size(md.configuration)
    small = target // 2 if small_file_size is None else small_file_size
    logical = list(md.partition_columns)
    keys = [snapshot.column_mapping.physical_column(c) for c in logical]
    files = snapshot.add_table(keys)
    sizes = files.column("size")
    files = files.append_column("small", pc.cast(pc.less(sizes, small), pa.int64()))
    files = files.append_column("clustered", pc.cast(pc.is_valid(files.column("clusteringProvider")), pa.int64()))
    files = files.append_column("hasStats", pc.cast(pc.is_valid(files.column("numRecords")), pa.int64()))
    partitions = _partitions(files, keys, logical)
    histogram = FileSizeHistogram.of(sizes.to_pylist(), SIZE_BINS).file_counts

    retention = table_properties.deleted_file_retention_ms(md)
    tombstones = snapshot.all_tombstones

    log_files = snapshot.log_store.list_from(0)
    commits = [f for f in log_files if f.kind == "commit" and f.version <= snapshot.version]
    history = recent_versions(snapshot.log_store, commits, history_limit)
    last_vacuum = next((v for v in history if v.operation in VACUUM_OPERATIONS), None)
    pending = _pending_removes(snapshot.log_store, commits, last_vacuum, retention)
    for r in tombstones:
        pending.setdefault(r.path, (r.size or 0, r.deletion_timestamp or 0))
    if pending:
        live = set(pc.filter(files.column("path"), pc.is_in(files.column("path"), pa.array(list(pending)))).to_pylist())
        pending = {path: entry for path, entry in pending.items() if path not in live}
    vacuumable = sum(size for size, when in pending.values() if when < now - retention)
    return HealthReport(
        table=table.uri,
        version=snapshot.version,
        timestamp=snapshot.timestamp,
        generated_at=now,
        partition_columns=logical,
        target_file_size=target,
        small_file_size=small,
        partitions=partitions,
        size_histogram=histogram,
        checkpoint_version=snapshot.segment.checkpoint_version,
        checkpoint_interval=table_properties.checkpoint_interval(md),
        last_optimize=next((v for v in history if v.operation in OPTIMIZE_OPERATIONS), None),
        last_vacuum=last_vacuum,
        num_tombstones=len(tombstones),
        tombstoned_bytes=sum(r.size or 0 for r in tombstones),
        vacuumable_bytes=vacuumable,
        deleted_file_retention_ms=retention,
        vacuum_lite_available=_lite_available(snapshot, commits),
        clustering_columns=[format_path(p) for p in clustering_columns(snapshot)],
        num_pending_removes=len(pending),
        history=history,
    )


def _partitions(files: pa.Table, keys: list[str], logical: list[str]) -> list[PartitionHealth]:
    """One :class:`PartitionHealth` per partition, sorted by partition values."""
    sums = ["size", "small", "numRecords", "dvCardinality", "clustered", "hasStats"]
    if not files.num_rows:
        return []
    if keys:
        grouped = files.group_by(keys, use_threads=False).aggregate([(c, "sum") for c in sums] + [("size", "count")])
        rows = grouped.to_pylist()
    else:
        rows = [{f"{c}_sum": pc.sum(files.column(c)).as_py() for c in sums} | {"size_count": files.num_rows}]
    out = [
        PartitionHealth(
            values={name: row[key] for name, key in zip(logical, keys)},
            num_files=row["size_count"],
            size_in_bytes=row["size_sum"] or 0,
            num_small_files=row["small_sum"] or 0,
            num_records=(row["numRecords_sum"] or 0) if row["hasStats_sum"] == row["size_count"] else None,
            num_deleted_records=row["dvCardinality_sum"] or 0,
            num_clustered_files=row["clustered_sum"] or 0,
        )
        for row in rows
    ]
    return sorted(out, key=lambda p: [(v is None, v or "") for v in p.values.values()])


def _pending_removes(
    store: LogStore, commits: Sequence[LogFile], last_vacuum: VersionInfo | None, retention_ms: int
) -> dict[str, tuple[int, int]]:
    """``{path: (size, deletionTimestamp)}`` of the ``remove`` actions VACUUM has not yet handled.

    The commits read are those after the version ``_last_vacuum_info`` records
    (VACUUM LITE's start; the earliest commit when none), at most
    :data:`MAX_REMOVE_COMMITS`, the oldest first. A ``remove`` in a commit at or
    before the last VACUUM that was past the retention then is left out: that
    VACUUM deleted it. Only ``remove`` lines are parsed, so a commit of 10,000
    ``add`` actions costs a read and a scan."""
    recorded = read_last_vacuum_info(store)
    floor = None
    if last_vacuum is not None and last_vacuum.timestamp is not None:
        floor = (last_vacuum.version, last_vacuum.timestamp - retention_ms)
    chosen = [
        c
        for c in commits
        if (recorded is None or c.version > recorded)
        and (floor is None or c.version > floor[0] or c.mtime_ms >= floor[1])
    ][:MAX_REMOVE_COMMITS]
    out: dict[str, tuple[int, int]] = {}
    for commit in chosen:
        try:
            data = store.read(commit.name)
        except FileNotFoundError:
            continue
        for line in data.split(b"\n"):
            if _REMOVE not in line[:32]:
                continue
            body = json.loads(line).get("remove")
            if not isinstance(body, dict) or not isinstance(body.get("path"), str):
                continue
            when = int(body.get("deletionTimestamp") or 0)
            if floor is not None and commit.version <= floor[0] and when < floor[1]:
                continue
            out[body["path"]] = (int(body.get("size") or 0), when)
    return out


_REMOVE = b'"remove"'


def _lite_available(snapshot: Snapshot, commits: list[Any]) -> bool:
    """Whether VACUUM LITE can run: the log still holds every commit since the last vacuum."""
    try:
        lite_commit_range(
            earliest_commit=commits[0].version if commits else snapshot.version,
            snapshot_version=snapshot.version,
            latest_outside_retention=snapshot.version,
            last_vacuum=read_last_vacuum_info(snapshot.log_store),
        )
    except VacuumLiteUnavailableError:
        return False
    return True
