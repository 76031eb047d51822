"""The operation and time of the newest commits, read cheaply.

Only each commit's ``commitInfo`` line is parsed (delta-spark and this
package write it first), so a commit that adds 100,000 files costs a read and
a line split, not 100,000 parsed actions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from airflow_delta_provider.delta.log.commit_summary import VersionInfo, version_info
from airflow_delta_provider.delta.log.store import LogFile, LogStore

_COMMIT_INFO = b'"commitInfo"'


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
        info = _commit_info(data)
        found = version_info(f.version, info)
        out.append(found if found.timestamp is not None else VersionInfo(f.version, f.mtime_ms, found.operation))
    return out


def _commit_info(data: bytes) -> dict[str, Any]:
    for line in data.split(b"\n"):
        if _COMMIT_INFO in line[:32]:
            try:
                body = json.loads(line).get("commitInfo")
            except ValueError:
                return {}
            return body if isinstance(body, dict) else {}
    return {}
