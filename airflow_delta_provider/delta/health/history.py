"""The operation and time of the newest commits, read cheaply.

Only each commit's ``commitInfo`` line is found and parsed (delta-spark and
this package write it first), so a commit that adds 100,000 files costs a
read and a search, not 100,000 parsed actions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from airflow_delta_provider.delta.log.commit_summary import VersionInfo, version_info
from airflow_delta_provider.delta.log.store import LogFile, LogStore

_COMMIT_INFO = b'"commitInfo"'
#: How a compact writer starts the line (a JSON string cannot hold it unescaped).
_COMPACT = b'{"commitInfo":'
_NEWLINE = ord("\n")


def recent_versions(store: LogStore, commits: Sequence[LogFile], limit: int) -> list[VersionInfo]:
    """:class:`VersionInfo` of the newest ``limit`` of ``commits``, newest first.

    A commit with no readable ``commitInfo`` keeps its file time and no
    operation; one that vanished (log cleanup) is left out."""
    out: list[VersionInfo] = []
    for f in reversed(commits[-limit:] if limit > 0 else []):
        try:
            data = store.read(f.name)
        except FileNotFoundError:
            continue
        info = commit_info_body(data)
        found = version_info(f.version, info)
        out.append(found if found.timestamp is not None else VersionInfo(f.version, f.mtime_ms, found.operation))
    return out


def commit_info_body(data: bytes) -> dict[str, Any]:
    """The ``commitInfo`` body of a commit file; {} when it has none."""
    start = data.find(_COMPACT)
    while start > 0 and data[start - 1] != _NEWLINE:  # not at a line start: look further
        start = data.find(_COMPACT, start + 1)
    if start >= 0:
        end = data.find(b"\n", start)
        lines = [data[start : end if end >= 0 else len(data)]]
    else:  # not written compactly: look at every line
        lines = [line for line in data.split(b"\n") if _COMMIT_INFO in line[:32]]
    for line in lines:
        try:
            body = json.loads(line).get("commitInfo")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    return {}
