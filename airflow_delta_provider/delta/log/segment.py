"""Which log files make up one version of a table.

A log segment is the newest complete checkpoint at or below the wanted
version plus the contiguous commits after it (delta-spark
``SnapshotManagement.getLogSegmentForVersion``). ``_last_checkpoint`` only
says where to start listing; when it is missing, stale or points at a torn
checkpoint, the segment is found by listing from version 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.delta.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from airflow_delta_provider.delta.log.store import LogFile, LogStore


@dataclass(frozen=True)
class LogSegment:
    version: int
    checkpoint_version: int | None
    checkpoint_files: tuple[LogFile, ...]  # one (classic or V2), or every part of a multi-part checkpoint
    commits: tuple[LogFile, ...]  # checkpoint_version+1 .. version, contiguous
    checksum: LogFile | None = None  # the version's ``.crc``, when the listing has one

    @property
    def last_commit(self) -> LogFile | None:
        return self.commits[-1] if self.commits else None


def complete_checkpoints(
    files: list[LogFile], skip_files: frozenset[str] = frozenset()
) -> dict[int, tuple[LogFile, ...]]:
    """The complete checkpoint to use at each version.

    A version may have several: a classic file, multi-part sets (complete
    only with every part), UUID-named V2 files of racing writers. One is
    picked deterministically in delta-spark's ``CheckpointInstance`` order:
    UUID-named over multi-part over classic, more parts over fewer, then the
    greatest file name. A checkpoint whose first file is in ``skip_files``
    (found torn) is passed over.
    """
    found: list[tuple[LogFile, ...]] = []
    parts: dict[tuple[int, int], dict[int, LogFile]] = {}
    for f in files:
        if f.kind == "v2checkpoint" or (f.kind == "checkpoint" and f.num_parts is None):
            found.append((f,))
        elif f.kind == "checkpoint":
            parts.setdefault((f.version, f.num_parts or 0), {})[f.part or 0] = f
    for (_, n), got in parts.items():
        if sorted(got) == list(range(1, n + 1)):
            found.append(tuple(got[i] for i in range(1, n + 1)))
    out: dict[int, tuple[LogFile, ...]] = {}
    for cp in sorted(found, key=_preference):
        if cp[0].name not in skip_files:
            out[cp[0].version] = cp  # the most preferred comes last and stays
    return out


def _preference(cp: tuple[LogFile, ...]) -> tuple[int, int, str]:
    first = cp[0]
    rank = 2 if first.kind == "v2checkpoint" else (1 if first.num_parts is not None else 0)
    return (rank, first.num_parts or 1, first.name)


def build_segment(
    files: list[LogFile],
    version: int | None,
    *,
    skip_checkpoints: frozenset[int] = frozenset(),
    skip_files: frozenset[str] = frozenset(),
    table_root: str = "",
) -> LogSegment:
    """The segment for ``version`` (latest when None) from a listing.

    Checkpoints at a version in ``skip_checkpoints``, or whose first file is
    in ``skip_files``, are not used (they were found torn).
    """
    commits = {f.version: f for f in files if f.kind == "commit"}
    checkpoints = {v: fs for v, fs in complete_checkpoints(files, skip_files).items() if v not in skip_checkpoints}
    if not commits and not checkpoints:
        raise TableNotFoundError(f"{table_root or 'path'} is not a Delta table: no commits in _delta_log")
    latest = max([*commits, *checkpoints])
    target = latest if version is None else version
    if version is not None and version > latest:
        raise VersionNotFoundError(f"version {version} does not exist; the latest version is {latest}")
    if target < 0:
        raise VersionNotFoundError(f"version {version} is negative")
    usable = [v for v in checkpoints if v <= target]
    cp = max(usable) if usable else None
    start = 0 if cp is None else cp + 1
    if cp is None and 0 not in commits:
        earliest = min(commits) if commits else None
        raise VersionNotFoundError(
            f"cannot reconstruct version {target}: no checkpoint at or below it and the log starts "
            f"at version {earliest} (earlier commits were cleaned up)"
        )
    wanted = range(start, target + 1)
    missing = [v for v in wanted if v not in commits]
    if missing:
        raise CorruptLogError(
            f"versions are not contiguous in {table_root or '_delta_log'}: "
            f"missing commit(s) {_ranges(missing)} between version {start} and {target}"
        )
    return LogSegment(
        version=target,
        checkpoint_version=cp,
        checkpoint_files=checkpoints[cp] if cp is not None else (),
        commits=tuple(commits[v] for v in wanted),
        checksum=next((f for f in files if f.kind == "crc" and f.version == target), None),
    )


def list_for_version(store: LogStore, version: int | None) -> list[LogFile]:
    """Log files worth reading for ``version``, starting at the checkpoint hint."""
    hint = store.read_last_checkpoint()
    if hint is not None and (version is None or hint["version"] <= version):
        files = store.list_from(hint["version"])
        # A hint is only trusted when its checkpoint is really there, whole.
        if hint["version"] in complete_checkpoints(files):
            return files
    return store.list_from(0)


def _ranges(versions: list[int]) -> str:
    out, start, prev = [], versions[0], versions[0]
    for v in [*versions[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)
