"""A watch over one partition: does it hold live data yet, and how much?

Answered from the log alone, as Databricks' ``DatabricksPartitionSensor``
answers from the catalog: the first poll reads the snapshot and keeps the
partition's live files with their row counts (``numRecords`` minus the rows
a deletion vector hides); later polls apply only the new commits' ``add`` and
``remove`` actions to that set. The partition counts as ready at the first
version where it holds a file with live rows, and at least ``min_records``
rows when that is asked; a file without ``numRecords`` stats cannot prove a
count, so a partition of such files is ready only when no count is asked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.commit_summary import CommitSummary
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.watch.commit_filter import PartitionScheme, PartitionSpec, partition_predicate
from airflow_delta_provider.delta.watch.commit_watch import PartitionMatcher

FileKey = tuple[str, str | None]


@dataclass(frozen=True)
class PartitionState:
    """The partition at ``version``."""

    version: int
    num_files: int
    num_records: int | None  # None when a live file has no numRecords stats

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "num_files": self.num_files, "num_records": self.num_records}


class PartitionWatch:
    """The live files of one partition, kept current commit by commit."""

    def __init__(self, probe: VersionProbe, partition: PartitionSpec, min_records: int | str | None = None) -> None:
        partition_predicate(partition)  # a predicate that does not parse fails here
        self.probe = probe
        self.partition = partition
        self.min_records = parse_min_records(min_records)
        # Adds and removes may spell one file's path differently (relative, absolute, encoded).
        self._canonical = PathCanonicalizer(probe.store.table_root)
        self.version: int | None = None  # None until the first poll found the table
        self._files: dict[FileKey, int | None] = {}
        self._in_partition: PartitionMatcher | None = None

    @property
    def state(self) -> PartitionState | None:
        if self.version is None:
            return None
        counts = list(self._files.values())
        records = None if any(n is None for n in counts) else sum(n for n in counts if n is not None)
        return PartitionState(self.version, len(counts), records)

    @property
    def ready(self) -> bool:
        state = self.state
        if state is None or not state.num_files:
            return False
        if state.num_records is None:
            return self.min_records is None
        return state.num_records >= (self.min_records or 1)

    # --- polls -------------------------------------------------------------------

    def poll(self) -> PartitionState | None:
        """One blocking poll: the state at which the partition is ready, else None.
        Returns None as well while the table does not exist."""
        if self.version is None:
            latest = self.probe.latest()
            if latest is None:
                return None
            self._load(latest)
            return self.state if self.ready else None
        latest = self.probe.newer_than(self.version)
        if latest is None:
            return None
        return self._apply(self.probe.commits(self.version + 1, latest), latest)

    async def poll_async(self) -> PartitionState | None:
        """:meth:`poll` through the probe's async methods (the first snapshot in a thread)."""
        if self.version is None:
            latest = await self.probe.latest_async()
            if latest is None:
                return None
            await asyncio.to_thread(self._load, latest)
            return self.state if self.ready else None
        latest = await self.probe.newer_than_async(self.version)
        if latest is None:
            return None
        return self._apply(await self.probe.commits_async(self.version + 1, latest), latest)

    # --- the file set ----------------------------------------------------------------

    def _load(self, version: int) -> None:
        from airflow_delta_provider.delta.table import DeltaTable

        snapshot = DeltaTable(self.probe.table_path, self.probe.storage_options).snapshot(version)
        self._use(snapshot.metadata)
        assert self._in_partition is not None
        self._files = {self._key(f): f.num_live_records for f in snapshot.files if self._in_partition(f)}
        self.version = snapshot.version

    def _apply(self, commits: list[CommitSummary], latest: int) -> PartitionState | None:
        """Apply ``commits`` one by one; the state at the first version where the
        partition is ready, else None (the watch then stands at ``latest``)."""
        for commit in commits:
            if commit.metadata is not None:
                self._use(commit.metadata)
            assert self._in_partition is not None
            for change in commit.files:
                if change.kind == "remove":
                    self._files.pop(self._key(change.file), None)
                elif change.kind == "add" and self._in_partition(change.file):
                    self._files[self._key(change.file)] = change.file.num_live_records
            self.version = commit.version
            if self.ready:
                return self.state
        self.version = latest
        return None

    def _use(self, metadata: Metadata) -> None:
        self._in_partition = PartitionScheme.of(metadata).matcher(self.partition, self.probe.table_path)

    def _key(self, add: AddFile) -> FileKey:
        return (self._canonical(add.path), add.dv_id)


def parse_min_records(value: int | str | None) -> int | None:
    """``min_records`` as a positive int (a templated one arrives as text)."""
    if value is None:
        return None
    try:
        count = int(value) if not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise InvalidInputError(f"min_records must be a positive integer, got {value!r}")
    return count


__all__ = ["PartitionState", "PartitionWatch", "parse_min_records"]
