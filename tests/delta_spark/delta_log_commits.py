"""Each commit of a table's log, summarised for the conflict rules of delta-spark's ``ConflictChecker``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from airflow_delta_provider.delta.actions.model import TOKEN_TAG


@dataclass
class Commit:
    """One ``N.json``: who made it and what it changed, by partition of ``p``."""

    version: int
    name: str | None  # the operation's name: userMetadata (delta-spark) or our token
    operation: str
    read_version: int | None
    blind_append: bool
    add_parts: set[str] = field(default_factory=set)
    remove_parts: set[str] = field(default_factory=set)
    metadata: bool = False
    protocol: bool = False


def commit_versions(root: Path) -> list[int]:
    """The versions of the log's commits (``N.json``; not a V2 checkpoint's ``N.checkpoint.<uuid>.json``)."""
    return sorted(int(f.stem) for f in (root / "_delta_log").glob("*.json") if f.stem.isdigit())


def read_commit(root: Path, version: int) -> Commit:
    """The commit; asserts it is a valid one (JSON lines, exactly one commitInfo)."""
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    actions = [json.loads(line) for line in lines if line.strip()]
    infos = [a["commitInfo"] for a in actions if "commitInfo" in a]
    assert len(infos) == 1, f"version {version} has {len(infos)} commitInfo actions"
    info = infos[0]
    tags = info.get("tags") or {}
    commit = Commit(
        version=version,
        name=info.get("userMetadata") or tags.get(TOKEN_TAG),
        operation=info.get("operation", ""),
        read_version=info.get("readVersion"),
        blind_append=bool(info.get("isBlindAppend", False)),
    )
    for action in actions:
        ((kind, body),) = action.items()
        if kind == "add":
            commit.add_parts.add(body["partitionValues"].get("p"))
        elif kind == "remove":
            commit.remove_parts.add((body.get("partitionValues") or {}).get("p"))
        elif kind == "metaData":
            commit.metadata = True
        elif kind == "protocol":
            commit.protocol = True
    return commit


def expected_conflict(reads_partition: bool, part: str, winner: Commit) -> str | None:
    """The conflict delta-spark's ConflictChecker raises, at its default
    isolation level (``Serializable``), for a transaction that read partition
    ``part`` (or read nothing, a blind append, when not ``reads_partition``)
    when ``winner`` committed first; None when there is none.

    The checks in its order: protocol, metadata, files added where the
    transaction read (blind appends included, at ``Serializable``), files it
    read that were removed. Only the partition decides here, as every UPDATE
    and MERGE of these tests reads the whole of its partition.
    """
    if winner.protocol:
        return "ProtocolChanged"
    if winner.metadata:
        return "MetadataChanged"
    if not reads_partition:
        return None
    if part in winner.add_parts:
        return "ConcurrentAppend"
    if part in winner.remove_parts:
        return "ConcurrentDeleteRead"
    return None
