"""VACUUM LITE: the removable files, found from the log alone.

A full VACUUM (:mod:`.vacuum`) lists the whole table folder; on an object
store with millions of files that listing is the cost. LITE, as delta-spark's
``VacuumCommand`` (``VacuumType.LITE``, ``getFilesFromDeltaLog``) does it,
reads instead the ``remove`` (and ``cdc``) actions of the commits made since
the last vacuum, and never lists the data folder:

- the commits read are ``start..end``, both inclusive: ``end`` is the newest
  commit made at or before ``now - retention`` (delta-spark's
  ``getActiveCommitAtTime(deleteBefore, canReturnLastCommit=true)``, commit
  times as time travel sees them); ``start`` is the version after the one the
  last vacuum recorded, or the earliest commit when none is recorded, and at
  most the snapshot's version. No commit at or before ``now - retention``:
  nothing to do;
- a file they name is deleted when its ``deletionTimestamp`` (0 for a ``cdc``
  file) is before ``now - retention`` and no live ``add`` or kept tombstone
  refers to it (the same kept set as a full VACUUM's); its deletion vector file
  goes with it;
- the state is the file ``_delta_log/_last_vacuum_info``,
  ``{"latestCommitVersionOutsideOfRetentionWindow": end}``, written after
  every completed VACUUM: LITE records ``end``, FULL records nothing (``{}``),
  exactly as delta-spark's ``LastVacuumInfo.persistLastVacuumInfo`` does, so
  the two engines share it;
- when the log has lost commits LITE needs (the earliest commit is not 0 and
  no recorded version reaches it), LITE is refused with
  :class:`~airflow_delta_provider.delta.errors.VacuumLiteUnavailableError`,
  delta-spark's ``DELTA_CANNOT_VACUUM_LITE``.

By design LITE leaves files the log never named (orphans of failed writes)
and folders; only a full VACUUM finds those.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile, RemoveFile, parse_commit
from airflow_delta_provider.delta.errors import RetentionTooShortError
from airflow_delta_provider.delta.log.last_vacuum_info import (
    lite_commit_range,
    read_last_vacuum_info,
)
from airflow_delta_provider.delta.log.store import LogFile, LogStore, commit_name
from airflow_delta_provider.delta.partitions import relative_to_root
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable, newest_commit_at_or_before
from airflow_delta_provider.operations.vacuum.plan import ListedEntry, VacuumPlan, kept_paths, referenced_paths


@dataclass(frozen=True)
class LitePlan:
    """A LITE plan: what to delete, the commits read, and the state to record."""

    plan: VacuumPlan
    #: The commits read, both inclusive; None when none was due.
    commit_range: tuple[int, int] | None
    #: What ``_last_vacuum_info`` records once the deletes are done.
    latest_outside_retention: int | None


# --- planning -----------------------------------------------------------------------


def plan_from_log_actions(
    *,
    table_root: str,
    actions: Iterable[RemoveFile | AddCDCFile],
    adds: Iterable[AddFile],
    tombstones: Iterable[RemoveFile],
    now_ms: int,
    retention_ms: int,
) -> VacuumPlan:
    """The files LITE deletes, from the ``remove`` and ``cdc`` actions of the commits read."""
    if retention_ms < 0:
        raise RetentionTooShortError(f"retention must not be negative, got {retention_ms} ms")
    delete_before = now_ms - retention_ms
    valid = kept_paths(table_root, adds, tombstones, delete_before)
    chosen: dict[str, ListedEntry] = {}
    for action in actions:
        if isinstance(action, AddCDCFile):
            rel = relative_to_root(table_root, action.path)
            candidates = [] if rel is None else [(rel, action.size, 0)]
        else:
            when = action.deletion_timestamp or 0
            if when >= delete_before:
                continue
            paths = list(referenced_paths(action, table_root))
            dv_size = action.deletion_vector.size_in_bytes if action.deletion_vector else 0
            candidates = [(p, action.size or 0 if i == 0 else dv_size, when) for i, p in enumerate(paths)]
        for rel, size, when in candidates:
            if rel in valid or rel.split("/", 1)[0] == "_delta_log":
                continue
            known = chosen.get(rel)
            if known is None or known.mtime_ms < when:  # of duplicates, the newest (as delta-spark)
                chosen[rel] = ListedEntry(rel, size, when)
    files = sorted(chosen.values(), key=lambda e: e.path)
    return VacuumPlan(delete_before_ms=delete_before, retention_ms=retention_ms, files=files, dirs=[], searched_dirs=0)


def plan_vacuum_lite(table: DeltaTable, snapshot: Snapshot, *, now_ms: int, retention_ms: int) -> LitePlan:
    """LITE's plan for ``table`` at ``snapshot`` (its latest version).

    Store requests: one listing of ``_delta_log`` (none of the data folder),
    one read of ``_last_vacuum_info``, one read per commit in the range (plus,
    with in-commit timestamps, the first line of each later commit)."""
    files = table.log_store.list_from(0)
    commits = [f for f in files if f.kind == "commit"]
    delete_before = now_ms - retention_ms
    newest = newest_commit_at_or_before(table.commit_timestamps(files, snapshot), delete_before)
    latest_outside = None if newest is None else min(newest[0], snapshot.version)
    commit_range = lite_commit_range(
        earliest_commit=commits[0].version if commits else snapshot.version,
        snapshot_version=snapshot.version,
        latest_outside_retention=latest_outside,
        last_vacuum=read_last_vacuum_info(table.log_store) if latest_outside is not None else None,
    )
    actions: Iterable[RemoveFile | AddCDCFile] = ()
    if commit_range is not None:
        first, last = commit_range
        actions = removed_files(table.log_store, (c for c in commits if first <= c.version <= last))
    plan = plan_from_log_actions(
        table_root=table.root,
        actions=actions,
        adds=snapshot.files,
        tombstones=snapshot.all_tombstones,
        now_ms=now_ms,
        retention_ms=retention_ms,
    )
    return LitePlan(plan=plan, commit_range=commit_range, latest_outside_retention=latest_outside)


def removed_files(store: LogStore, commits: Iterable[LogFile]) -> Iterable[RemoveFile | AddCDCFile]:
    """The ``remove`` and ``cdc`` actions of ``commits``, read one commit at a time."""
    for commit in commits:
        for action in parse_commit(store.read(commit_name(commit.version))):
            if isinstance(action, (RemoveFile, AddCDCFile)):
                yield action


__all__ = [
    "LitePlan",
    "plan_from_log_actions",
    "plan_vacuum_lite",
    "removed_files",
]
