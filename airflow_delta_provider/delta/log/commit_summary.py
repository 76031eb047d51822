"""What one commit did, read from its commit file alone.

Watchers (sensors and triggers) look at each new commit once. Everything
they judge a commit by is in its own JSON file: ``commitInfo`` (operation,
timestamp), the files it adds and removes with their ``dataChange`` flag and
partition values, its change-data (``cdc``) files, and a new ``metaData`` when
it changes the schema or the partitioning. No snapshot and no data file is
read, so the cost of a commit is one GET whatever the log's length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from airflow_delta_provider.delta.actions.model import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    Metadata,
    RemoveFile,
    parse_commit,
)


@dataclass(frozen=True)
class VersionInfo:
    """One table version, with what its ``commitInfo`` says about it."""

    version: int
    timestamp: int | None  # milliseconds since the epoch
    operation: str | None
    #: The operation token a writing Airflow task recorded (``commitInfo.tags``); None for other writers.
    token: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp, "operation": self.operation}


@dataclass(frozen=True)
class FileChange:
    """A file a commit adds, removes or writes as change data.

    ``file`` is an ``add`` view of it (a removed file as the ``add`` it was),
    so partition values and stats are read the same way for all three kinds.
    ``partition_known`` is False for a tombstone of an old writer that did not
    record its partition values.
    """

    kind: Literal["add", "remove", "cdc"]
    file: AddFile
    data_change: bool
    partition_known: bool = True


@dataclass(frozen=True)
class CommitSummary:
    """One commit: its ``commitInfo``, its file changes and its new ``metaData``."""

    info: VersionInfo
    files: tuple[FileChange, ...]
    metadata: Metadata | None

    @property
    def version(self) -> int:
        return self.info.version

    @property
    def changes_data(self) -> bool:
        """Whether the commit adds or removes rows: a file with ``dataChange``
        true, or change-data files (always ``dataChange`` false by protocol)."""
        return any(f.data_change or f.kind == "cdc" for f in self.files)

    @classmethod
    def parse(cls, version: int, data: bytes) -> CommitSummary:
        """The summary of commit ``version`` from its file's bytes."""
        commit_info: CommitInfo | None = None
        metadata: Metadata | None = None
        files: list[FileChange] = []
        for action in parse_commit(data):
            if isinstance(action, AddFile):
                files.append(FileChange("add", action, action.data_change))
            elif isinstance(action, RemoveFile):
                known = action.partition_values is not None
                files.append(FileChange("remove", action.as_add(), action.data_change, known))
            elif isinstance(action, AddCDCFile):
                files.append(FileChange("cdc", action.as_add(), action.data_change))
            elif isinstance(action, Metadata):
                metadata = action
            elif isinstance(action, CommitInfo):
                commit_info = action
        return cls(version_info(version, commit_info.raw if commit_info else {}), tuple(files), metadata)


def version_info(version: int, body: Mapping[str, Any]) -> VersionInfo:
    """The :class:`VersionInfo` of a ``commitInfo`` body. The timestamp is
    ``inCommitTimestamp`` when the table records one, else the writer's
    ``commitInfo.timestamp``."""
    timestamp = body.get("inCommitTimestamp", body.get("timestamp"))
    operation = body.get("operation")
    token = CommitInfo(dict(body)).token
    return VersionInfo(
        version,
        timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else None,
        operation if isinstance(operation, str) else None,
        token if isinstance(token, str) else None,
    )


__all__ = ["CommitSummary", "FileChange", "VersionInfo", "version_info"]
