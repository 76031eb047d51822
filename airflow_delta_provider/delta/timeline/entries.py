"""One row per version, from each commit's ``commitInfo`` alone, a bounded page at a time.

A page of ``limit`` versions costs one listing of ``_delta_log`` from the
page's first version and one read per commit, whatever the log's length; a
caller that keeps a cache keyed by (table root, version) reads each commit
once (a commit file never changes).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.health.history import commit_info_body
from airflow_delta_provider.delta.log.commit_summary import version_info

if TYPE_CHECKING:
    from airflow_delta_provider.delta.table import DeltaTable

#: Versions per page by default, and at most.
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: The operationMetrics that give each column, the first present wins: delta-spark's
#: names (WRITE, UPDATE, DELETE, MERGE), then delta-rs's.
ROWS_WRITTEN = ("numOutputRows", "numTargetRowsInserted", "num_added_rows")
ROWS_CHANGED = ("numUpdatedRows", "numTargetRowsUpdated", "num_updated_rows")
ROWS_DELETED = ("numDeletedRows", "numTargetRowsDeleted", "num_deleted_rows")
BYTES_WRITTEN = ("numOutputBytes", "numAddedBytes", "numTargetBytesAdded", "num_added_bytes")
DURATION_MS = ("executionTimeMs", "execution_time_ms")

#: A cache of entries by (table root, version).
EntryCache = MutableMapping[tuple[str, int], "TimelineEntry"]


@dataclass(frozen=True)
class TimelineEntry:
    """What one commit says about itself."""

    version: int
    timestamp: int | None
    operation: str | None
    rows_written: int | None
    rows_changed: int | None
    rows_deleted: int | None
    bytes_written: int | None
    duration_ms: int | None
    #: ``commitInfo.engineInfo``: which engine wrote the commit.
    engine: str | None
    #: The operation token (``dag_id/task_id/run_id/map_index``) of the task instance
    #: that committed it; None for a commit another engine, or a user, made.
    token: str | None

    def to_dict(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class TimelinePage:
    """Versions ``entries`` (newest first) of a table whose newest version is ``latest``."""

    latest: int
    entries: list[TimelineEntry]
    #: The ``before`` of the next, older page; None when this page reaches the oldest commit.
    older: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"latest": self.latest, "older": self.older, "versions": [e.to_dict() for e in self.entries]}


def entry_of(version: int, body: Mapping[str, Any], file_time_ms: int | None = None) -> TimelineEntry:
    """The entry of commit ``version`` whose ``commitInfo`` is ``body`` ({} when it has none)."""
    info = version_info(version, body)
    raw_metrics = body.get("operationMetrics")
    metrics: Mapping[str, Any] = raw_metrics if isinstance(raw_metrics, Mapping) else {}
    tags = body.get("tags")
    token = tags.get(TOKEN_TAG) if isinstance(tags, Mapping) else None
    engine = body.get("engineInfo")
    return TimelineEntry(
        version=version,
        timestamp=info.timestamp if info.timestamp is not None else file_time_ms,
        operation=info.operation,
        rows_written=_metric(metrics, ROWS_WRITTEN),
        rows_changed=_metric(metrics, ROWS_CHANGED),
        rows_deleted=_metric(metrics, ROWS_DELETED),
        bytes_written=_metric(metrics, BYTES_WRITTEN),
        duration_ms=_metric(metrics, DURATION_MS),
        engine=engine if isinstance(engine, str) else None,
        token=token if isinstance(token, str) else None,
    )


def timeline(
    table: DeltaTable,
    before: int | None = None,
    limit: int = PAGE_SIZE,
    *,
    latest: int | None = None,
    cache: EntryCache | None = None,
) -> TimelinePage:
    """The ``limit`` newest versions older than ``before`` (all when None), newest first.

    ``latest`` saves looking the newest version up when the caller knows it.
    A commit that log cleanup removed is left out.
    """
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInputError(f"limit must be from 1 to {MAX_PAGE_SIZE}, got {limit}")
    if before is not None and before < 1:
        raise InvalidInputError(f"before must be >= 1, got {before}")
    newest = table.latest_version() if latest is None else latest
    top = newest if before is None else min(before - 1, newest)
    start = max(0, top - limit + 1)
    root = table.root
    entries: list[TimelineEntry] = []
    commits = [f for f in table.log_store.list_from(start) if f.kind == "commit" and f.version <= top]
    for f in reversed(commits):
        key = (root, f.version)
        entry = cache.get(key) if cache is not None else None
        if entry is None:
            try:
                body = commit_info_body(table.log_store.read(f.name))
            except FileNotFoundError:
                continue
            entry = entry_of(f.version, body, f.mtime_ms)
            if cache is not None:
                cache[key] = entry
        entries.append(entry)
    older = start if start > 0 and commits and commits[0].version == start else None
    return TimelinePage(newest, entries, older)


def _metric(metrics: Mapping[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = metrics.get(name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.lstrip("-").isdigit():
            return int(value)
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


__all__ = ["PAGE_SIZE", "TimelineEntry", "TimelinePage", "entry_of", "timeline"]
