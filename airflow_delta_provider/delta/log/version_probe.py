"""Cheap questions about a table's versions, at a constant number of requests.

Delta versions are contiguous (PROTOCOL.md "Delta Log Entries": commit ``n``
is only written once ``n-1`` exists, and log cleanup removes only a prefix),
so "is there anything after version ``v``?" is one existence check of
``v+1``'s commit, and "which is the latest?" is one listing that starts after
``v`` (or after the version ``_last_checkpoint`` names). No question lists
the whole log, so a poll costs the same on a log of 100 versions and of
10,000. Where a store cannot list from a name (Azure), the latest version is
found by existence checks at doubling steps instead. Sensors and triggers poll through this module.

Each question is written once, as a generator that yields the requests it
needs (:class:`_Head`, :class:`_List`, :class:`_Read`) and receives their
answers; :meth:`VersionProbe._run` answers them with blocking calls and
:meth:`VersionProbe._run_async` with obstore's async API, so a trigger never
blocks the triggerer's event loop and both paths share one algorithm.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from airflow_delta_provider.delta.errors import CorruptLogError
from airflow_delta_provider.delta.log.commit_summary import CommitSummary, VersionInfo, version_info
from airflow_delta_provider.delta.log.store import LAST_CHECKPOINT, LogStore, commit_name, parse_checkpoint_hint
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.storage.renewal import Lease

T = TypeVar("T")


@dataclass(frozen=True)
class _Head:
    """Does commit ``version`` exist? (one HEAD)"""

    version: int


@dataclass(frozen=True)
class _List:
    """The commit versions >= ``version`` (one listing from there)."""

    version: int


@dataclass(frozen=True)
class _Read:
    """The bytes of log file ``name``, or None (one GET)."""

    name: str


Question = Generator[Any, Any, T]


class VersionProbe:
    """Cheap questions about one table's versions.

    Every method states its cost in requests; ``*_async`` twins ask the same
    questions without blocking an event loop.

    :param lease: Held as long as the probe: the credentials a catalog vended for the
        table are renewed before they expire (:mod:`~airflow_delta_provider.delta.storage.renewal`),
        for the probe's store and every store a watch opens on the table.
    """

    def __init__(
        self, table_path: str, storage_options: Mapping[str, Any] | None = None, lease: Lease | None = None
    ) -> None:
        self.table_path = table_path
        self.lease = lease
        self.storage_options = dict(storage_options or {})
        self.store = LogStore(open_storage(table_path, storage_options))
        self._offset_listing = self.store.storage.lists_from_offset

    # --- the questions --------------------------------------------------------

    def has(self, version: int) -> bool:
        """Whether commit ``version`` exists. One request (none for a negative version)."""
        return self._run(self._has(version))

    def checkpoint_hint(self) -> int:
        """The version ``_last_checkpoint`` names, or -1. One request."""
        return self._run(self._checkpoint_hint())

    def latest(self) -> int | None:
        """The latest version, or None when there is no table.

        Two requests: the hint, then a listing from it. A hint left over from
        an earlier table at this path costs a listing from version 0 more.
        """
        return self._run(self._latest())

    def newer_than(self, version: int) -> int | None:
        """The latest version when one newer than ``version`` exists, else None.

        One request when there is nothing new; two (a listing from
        ``version + 1``) when there is.
        """
        return self._run(self._newer_than(version))

    def table_exists(self, known_version: int = -1) -> bool:
        """Whether the table exists; one request when ``known_version`` is still there."""
        return self._run(self._table_exists(known_version))

    def first_present(self, low: int, high: int) -> int:
        """The earliest existing commit in ``[low, high]``; ``high`` must exist.

        Log cleanup removes a prefix of the commits: one listing from ``low``.
        """
        return self._run(self._first_present(low, high))

    def info(self, version: int) -> VersionInfo:
        """Timestamp and operation from the ``commitInfo`` of ``version``. One request.

        The timestamp is ``inCommitTimestamp`` when the table records one,
        else the writer's ``commitInfo.timestamp``.
        """
        return self._run(self._info(version))

    def commits(self, low: int, high: int) -> list[CommitSummary]:
        """What each of the commits ``low..high`` did, in order; one request
        each. A commit that log cleanup removed meanwhile is left out."""
        return self._run(self._commits(low, high))

    async def has_async(self, version: int) -> bool:
        return await self._run_async(self._has(version))

    async def checkpoint_hint_async(self) -> int:
        return await self._run_async(self._checkpoint_hint())

    async def latest_async(self) -> int | None:
        return await self._run_async(self._latest())

    async def newer_than_async(self, version: int) -> int | None:
        return await self._run_async(self._newer_than(version))

    async def table_exists_async(self, known_version: int = -1) -> bool:
        return await self._run_async(self._table_exists(known_version))

    async def first_present_async(self, low: int, high: int) -> int:
        return await self._run_async(self._first_present(low, high))

    async def info_async(self, version: int) -> VersionInfo:
        return await self._run_async(self._info(version))

    async def commits_async(self, low: int, high: int) -> list[CommitSummary]:
        return await self._run_async(self._commits(low, high))

    # --- each question, once ----------------------------------------------------

    @staticmethod
    def _has(version: int) -> Question[bool]:
        if version < 0:
            return False
        return (yield _Head(version))

    @staticmethod
    def _checkpoint_hint() -> Question[int]:
        raw = yield _Read(LAST_CHECKPOINT)
        hint = parse_checkpoint_hint(raw) if raw is not None else None
        return hint["version"] if hint else -1

    def _latest(self) -> Question[int | None]:
        hint = yield from self._checkpoint_hint()
        if hint >= 0:
            if not self._offset_listing:
                if (yield from self._has(hint)):
                    return (yield from self._gallop(hint))
            else:
                versions = yield _List(hint)
                if versions:
                    return max(versions)
        versions = yield _List(0)
        return max(versions) if versions else None

    def _newer_than(self, version: int) -> Question[int | None]:
        if not (yield from self._has(version + 1)):
            return None
        if not self._offset_listing:
            return (yield from self._gallop(version + 1))
        versions = yield _List(version + 1)
        return max(versions) if versions else None

    @staticmethod
    def _gallop(low: int) -> Question[int]:
        """The latest version, given that ``low`` exists: existence checks at
        doubling steps, then a bisection of the gap. ``2*log2(k)`` requests for
        ``k`` new versions, whatever the log's length (for stores that cannot
        list from a name)."""
        step = 1
        while (yield _Head(low + step)):
            low += step
            step *= 2
        high = low + step
        while high - low > 1:
            mid = (low + high) // 2
            if (yield _Head(mid)):
                low = mid
            else:
                high = mid
        return low

    def _table_exists(self, known_version: int) -> Question[bool]:
        if (yield from self._has(known_version)):
            return True
        return (yield from self._latest()) is not None

    @staticmethod
    def _first_present(low: int, high: int) -> Question[int]:
        versions = yield _List(low)
        present = [v for v in versions if v <= high]
        return min(present) if present else high

    @staticmethod
    def _info(version: int) -> Question[VersionInfo]:
        data = yield _Read(commit_name(version))
        if data is None:
            return VersionInfo(version, None, None)
        return version_info(version, _commit_info(data))

    @staticmethod
    def _commits(low: int, high: int) -> Question[list[CommitSummary]]:
        out = []
        for version in range(max(low, 0), high + 1):
            data = yield _Read(commit_name(version))
            if data is None:
                continue
            try:
                out.append(CommitSummary.parse(version, data))
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptLogError(f"commit {commit_name(version)} cannot be parsed: {exc!r}") from exc
        return out

    # --- answering the requests ----------------------------------------------------

    def _run(self, question: Question[T]) -> T:
        try:
            request = next(question)
            while True:
                request = question.send(self._answer(request))
        except StopIteration as done:
            return done.value

    async def _run_async(self, question: Question[T]) -> T:
        try:
            request = next(question)
            while True:
                request = question.send(await self._answer_async(request))
        except StopIteration as done:
            return done.value

    def _answer(self, request: Any) -> Any:
        store = self.store
        if isinstance(request, _Head):
            return store.exists(commit_name(request.version))
        if isinstance(request, _List):
            return [f.version for f in store.list_from(request.version) if f.kind == "commit"]
        try:
            return store.read(request.name)
        except FileNotFoundError:
            return None

    async def _answer_async(self, request: Any) -> Any:
        storage = self.store.storage
        if isinstance(request, _Head):
            try:
                await storage.head_async(self.store.path(commit_name(request.version)))
            except FileNotFoundError:
                return False
            return True
        if isinstance(request, _List):
            return [f.version for f in await self.store.list_from_async(request.version) if f.kind == "commit"]
        try:
            return await self.store.read_async(request.name)
        except FileNotFoundError:
            return None


def _commit_info(data: bytes) -> dict[str, Any]:
    """The ``commitInfo`` of a commit file, or ``{}``; other lines are not parsed."""
    for line in data.splitlines():
        if b'"commitInfo"' not in line:
            continue
        try:
            body = json.loads(line).get("commitInfo")
        except ValueError:
            continue
        if isinstance(body, dict):
            return body
    return {}


__all__ = ["CommitSummary", "VersionInfo", "VersionProbe"]
