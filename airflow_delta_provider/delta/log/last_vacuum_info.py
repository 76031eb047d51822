"""delta-spark's ``_last_vacuum_info`` in ``_delta_log``: how far VACUUM LITE has read.

VACUUM LITE records the newest commit whose removed files it deleted; the
next LITE reads the commits after it. The health report reads it too, to say
whether a LITE can run, so it lives in the core rather than in the operation.
"""

from __future__ import annotations

import json

from airflow_delta_provider.delta.errors import VacuumLiteUnavailableError
from airflow_delta_provider.delta.log.store import LogStore

#: delta-spark's ``LastVacuumInfo`` file, in ``_delta_log``.
LAST_VACUUM_INFO = "_last_vacuum_info"
_LAST_OUTSIDE_KEY = "latestCommitVersionOutsideOfRetentionWindow"

#: delta-spark's message for ``DELTA_CANNOT_VACUUM_LITE``.
CANNOT_VACUUM_LITE = (
    "VACUUM LITE cannot delete all eligible files as some files are not referenced by the Delta log. "
    "Please run VACUUM FULL."
)


# --- state ------------------------------------------------------------------------


def read_last_vacuum_info(store: LogStore) -> int | None:
    """The version the last vacuum recorded; None when no file, none recorded,
    or an unreadable one (delta-spark treats a corrupt file as absent)."""
    try:
        raw = json.loads(store.read(LAST_VACUUM_INFO))
    except (FileNotFoundError, ValueError):
        return None
    value = raw.get(_LAST_OUTSIDE_KEY) if isinstance(raw, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def last_vacuum_info_json(latest_outside_retention: int | None) -> bytes:
    """The file's content, as delta-spark's Jackson writes it (an absent value is left out)."""
    info = {} if latest_outside_retention is None else {_LAST_OUTSIDE_KEY: latest_outside_retention}
    return json.dumps(info, separators=(",", ":")).encode()


def write_last_vacuum_info(store: LogStore, latest_outside_retention: int | None) -> None:
    store.write_atomic(LAST_VACUUM_INFO, last_vacuum_info_json(latest_outside_retention))


# --- the commits to read ------------------------------------------------------------


def lite_commit_range(
    *, earliest_commit: int, snapshot_version: int, latest_outside_retention: int | None, last_vacuum: int | None
) -> tuple[int, int] | None:
    """The commits LITE reads (inclusive), None when none is due; refused when
    the log no longer holds them (delta-spark's ``getFilesFromDeltaLog``)."""
    if latest_outside_retention is None:
        return None
    if earliest_commit != 0 and (last_vacuum is None or last_vacuum < earliest_commit):
        first = "no earlier vacuum is recorded" if last_vacuum is None else f"the last vacuum recorded {last_vacuum}"
        raise VacuumLiteUnavailableError(
            f"{CANNOT_VACUUM_LITE} (the log starts at version {earliest_commit} and {first}: "
            "log cleanup removed commits whose removed files LITE would have to delete)"
        )
    start = min(snapshot_version, earliest_commit if last_vacuum is None else last_vacuum + 1)
    if start > latest_outside_retention:
        return None
    return start, latest_outside_retention


__all__ = [
    "CANNOT_VACUUM_LITE",
    "LAST_VACUUM_INFO",
    "last_vacuum_info_json",
    "lite_commit_range",
    "read_last_vacuum_info",
    "write_last_vacuum_info",
]
