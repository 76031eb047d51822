"""Cheap questions about a table's versions, answered without listing the log.

Delta versions are contiguous (PROTOCOL.md "Delta Log Entries": commit ``n``
is only written once ``n-1`` exists, and log cleanup removes only a prefix),
so "is there anything after version ``v``?" is one existence check of
``v+1``'s commit, and "what is the latest version?" is a galloping search over
commit names started at the version ``_last_checkpoint`` points to. The cost
grows with the commits since the last checkpoint, never with the length of the
log. Sensors and triggers poll through this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.log_store import LogStore, commit_name, resolve_table


@dataclass(frozen=True)
class VersionInfo:
    """One table version, with what its ``commitInfo`` says about it."""

    version: int
    timestamp: int | None  # milliseconds since the epoch
    operation: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp, "operation": self.operation}


class VersionProbe:
    """Cheap questions about one table's versions, answered without a listing.

    Every method states its cost in log-store calls. The only listing left is
    a fallback for a log with neither ``_last_checkpoint`` nor version 0
    (a missing table, or a cleaned-up log whose hint was lost), where it is
    the only way to learn anything.
    """

    def __init__(self, table_path: str) -> None:
        fs, root = resolve_table(table_path)
        self.table_path = table_path
        self.store: LogStore = LogStore(fs, root)

    def has(self, version: int) -> bool:
        """Whether commit ``version`` exists. One call (none for a negative version)."""
        return version >= 0 and self.store.exists(commit_name(version))

    def checkpoint_hint(self) -> int:
        """The version ``_last_checkpoint`` names, or -1. One call."""
        info = self.store.read_last_checkpoint()
        return info["version"] if info else -1

    def latest(self) -> int | None:
        """The latest version, or None when there is no table.

        One hint read plus about ``2*log2(k)`` existence checks, ``k`` being
        the commits since the last checkpoint.
        """
        hint = self.checkpoint_hint()
        if hint >= 0:
            top = self._gallop(hint)
            # A hint left over from an earlier table at this path may name a
            # version that no longer exists; check it before trusting it.
            if top > hint or self.has(hint):
                return top
        if self.has(0):
            return self._gallop(0)
        commits = [f.version for f in self.store.list_from(0) if f.kind == "commit"]
        return max(commits) if commits else None

    def newer_than(self, version: int) -> int | None:
        """The latest version when one newer than ``version`` exists, else None.

        One existence check when there is nothing new. When there is, the
        search starts at the later of ``version + 1`` and the checkpoint hint,
        so it stays short however far behind ``version`` is.
        """
        first = version + 1
        if not self.has(first):
            return None
        hint = self.checkpoint_hint()
        if hint > first:
            top = self._gallop(hint)
            if top > hint or self.has(hint):
                return top
        return self._gallop(first)

    def table_exists(self, known_version: int = -1) -> bool:
        """Whether the table exists; one call when ``known_version`` is still there."""
        return self.has(known_version) or self.latest() is not None

    def first_present(self, low: int, high: int) -> int:
        """The earliest existing commit in ``[low, high]``; ``high`` must exist.

        Log cleanup removes a prefix of the commits, so presence is monotone
        and a binary search finds the boundary in ``log2(high - low)`` calls.
        """
        while low < high:
            mid = (low + high) // 2
            if self.has(mid):
                high = mid
            else:
                low = mid + 1
        return high

    def info(self, version: int) -> VersionInfo:
        """Timestamp and operation from the ``commitInfo`` of ``version``. One read.

        The timestamp is ``inCommitTimestamp`` when the table records one,
        else the writer's ``commitInfo.timestamp``.
        """
        try:
            data = self.store.read(commit_name(version))
        except FileNotFoundError:
            return VersionInfo(version, None, None)
        commit_info = _commit_info(data)
        timestamp = commit_info.get("inCommitTimestamp", commit_info.get("timestamp"))
        operation = commit_info.get("operation")
        return VersionInfo(
            version,
            timestamp if isinstance(timestamp, int) else None,
            operation if isinstance(operation, str) else None,
        )

    def _gallop(self, low: int) -> int:
        """The latest version, given that ``low`` exists (or is 0 and exists).

        Doubles the step until a commit is missing, then bisects the gap.
        """
        step = 1
        while self.has(low + step):
            low += step
            step *= 2
        high = low + step  # missing
        while high - low > 1:
            mid = (low + high) // 2
            if self.has(mid):
                low = mid
            else:
                high = mid
        return low


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
