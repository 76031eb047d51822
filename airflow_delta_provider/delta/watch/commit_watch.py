"""A watch over a table's new commits: poll, judge each commit once, report.

One :class:`CommitWatch` serves one sensor or trigger. A poll asks the probe
whether a version newer than the cursor exists (one request when nothing is
new), reads each new commit once, judges it with a
:class:`~airflow_delta_provider.delta.watch.commit_filter.CommitFilter`, and
moves the cursor to the latest version, so no commit is read twice and the
cost of a poll does not grow with the log. A partition filter needs the
table's partitioning: it is read once, from the snapshot at the baseline, and
then followed through the ``metaData`` of the new commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.errors import VersionNotFoundError
from airflow_delta_provider.delta.log.commit_summary import CommitSummary, VersionInfo
from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.watch.commit_filter import CommitFilter, PartitionScheme

PartitionMatcher = Callable[[AddFile], bool]


@dataclass(frozen=True)
class Fired:
    """The outcome of a poll that found commits passing the filter."""

    passed: tuple[VersionInfo, ...]  # in version order; never empty
    skipped: tuple[int, ...]  # versions since the baseline that did not pass

    @property
    def last(self) -> VersionInfo:
        return self.passed[-1]

    @property
    def versions(self) -> list[int]:
        return [info.version for info in self.passed]


def metadata_at(probe: VersionProbe, version: int) -> Metadata:
    """The table's ``metaData`` at ``version``, or at the latest version when
    log cleanup has removed what ``version`` needs."""
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(probe.table_path, probe.storage_options)
    try:
        return table.snapshot(version).metadata
    except VersionNotFoundError:
        return table.snapshot().metadata


class CommitWatch:
    """New commits after ``after_version`` that pass ``commit_filter``.

    :param every_commit: Read every new commit even when the filter passes
        everything, to report each version's operation and timestamp. Without
        it such a poll reads only the latest commit.
    :param skipped: Versions already skipped since the baseline (a watch
        resumed from stored state).
    """

    def __init__(
        self,
        probe: VersionProbe,
        after_version: int,
        commit_filter: CommitFilter | None = None,
        *,
        every_commit: bool = False,
        skipped: Iterable[int] = (),
    ) -> None:
        self.probe = probe
        self.cursor = after_version
        self.filter = commit_filter or CommitFilter()
        self.every_commit = every_commit
        self.skipped = list(skipped)
        self._in_partition: PartitionMatcher | None = None

    @property
    def needs_partitioning(self) -> bool:
        """Whether the next poll must first read the table's partitioning."""
        return self.filter.partition is not None and self._in_partition is None and self.cursor >= 0

    def load_partitioning(self) -> None:
        """Read the partitioning at the cursor and check the partition filter
        against it (an unknown column fails here, at the first poll)."""
        self._use(metadata_at(self.probe, self.cursor))

    def poll(self) -> Fired | None:
        """One blocking poll."""
        if self.needs_partitioning:
            self.load_partitioning()
        latest = self.probe.newer_than(self.cursor)
        if latest is None:
            return None
        if self._latest_suffices:
            return self._all_up_to(latest, self.probe.info(latest))
        return self._judge(self.probe.commits(self.cursor + 1, latest), latest)

    async def poll_async(self) -> Fired | None:
        """One poll through the probe's async methods (a snapshot load for the
        partitioning runs in a thread)."""
        if self.needs_partitioning:
            await asyncio.to_thread(self.load_partitioning)
        latest = await self.probe.newer_than_async(self.cursor)
        if latest is None:
            return None
        if self._latest_suffices:
            return self._all_up_to(latest, await self.probe.info_async(latest))
        return self._judge(await self.probe.commits_async(self.cursor + 1, latest), latest)

    # --- judging ------------------------------------------------------------------

    @property
    def _latest_suffices(self) -> bool:
        return self.filter.passes_everything and not self.every_commit

    def _all_up_to(self, latest: int, info: VersionInfo) -> Fired:
        earlier = tuple(VersionInfo(v, None, None) for v in range(self.cursor + 1, latest))
        self.cursor = latest
        return Fired(earlier + (info,), tuple(self.skipped))

    def _judge(self, commits: list[CommitSummary], latest: int) -> Fired | None:
        passed = []
        unknown = self.filter.partition is not None and self._in_partition is None
        if unknown and commits and commits[0].metadata is None:  # no baseline; version 0 cleaned up
            self._use(metadata_at(self.probe, commits[0].version))
        for commit in commits:
            if commit.metadata is not None and self.filter.partition is not None:
                self._use(commit.metadata)
            if self.filter.accepts(commit, self._in_partition):
                passed.append(commit.info)
            else:
                self.skipped.append(commit.version)
        self.cursor = latest
        if not passed:
            return None
        return Fired(tuple(passed), tuple(self.skipped))

    def _use(self, metadata: Metadata) -> None:
        assert self.filter.partition is not None
        scheme = PartitionScheme.of(metadata)
        self._in_partition = scheme.matcher(self.filter.partition, self.probe.table_path)


__all__ = ["CommitWatch", "Fired", "metadata_at"]
