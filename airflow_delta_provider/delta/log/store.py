"""Reading and writing ``_delta_log`` files, through the storage seam.

The log store names the files of the log; every other module sees versions
and bytes. Commits are claimed with an atomic put-if-absent, the one
primitive Delta's concurrency control needs (PROTOCOL.md "Creation of New Log
Entries"), which :mod:`airflow_delta_provider.delta.storage` provides on every
backend (``os.link`` locally, a conditional create on object stores).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_delta_provider.delta.storage import ObjectMeta, TableStorage, open_storage

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
#: Folder of V2 checkpoint sidecars, inside ``_delta_log``.
SIDECAR_DIR = "_sidecars"

_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
_V2_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.[^.]+\.(json|parquet)$")
_COMPACTION_RE = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC_RE = re.compile(r"^(\d{20})\.crc$")


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def v2_checkpoint_name(version: int, unique: str, file_format: str) -> str:
    """A UUID-named V2 checkpoint: ``<version>.checkpoint.<unique>.<json|parquet>``."""
    return f"{version:020d}.checkpoint.{unique}.{file_format}"


@dataclass(frozen=True)
class LogFile:
    """One file of ``_delta_log`` that replay cares about."""

    name: str
    version: int
    kind: str  # "commit" | "checkpoint" | "v2checkpoint" | "compaction" | "crc"
    size: int
    mtime_ms: int
    part: int | None = None
    num_parts: int | None = None

    @classmethod
    def parse(cls, name: str, size: int, mtime_ms: int) -> LogFile | None:
        if m := _COMMIT_RE.match(name):
            return cls(name, int(m[1]), "commit", size, mtime_ms)
        if m := _CHECKPOINT_RE.match(name):
            part = int(m[2]) if m[2] else None
            parts = int(m[3]) if m[3] else None
            return cls(name, int(m[1]), "checkpoint", size, mtime_ms, part, parts)
        if m := _V2_CHECKPOINT_RE.match(name):
            return cls(name, int(m[1]), "v2checkpoint", size, mtime_ms)
        if m := _COMPACTION_RE.match(name):
            return cls(name, int(m[1]), "compaction", size, mtime_ms)
        if m := _CRC_RE.match(name):
            return cls(name, int(m[1]), "crc", size, mtime_ms)
        return None

    @property
    def is_checkpoint(self) -> bool:
        """Any checkpoint file: classic, a part of a multi-part one, or UUID-named V2."""
        return self.kind in ("checkpoint", "v2checkpoint")

    @property
    def is_json(self) -> bool:
        return self.name.endswith(".json")


def resolve_table(uri: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> TableStorage:
    """The storage of a table given as a path or a URI (see :mod:`.storage`)."""
    return open_storage(uri, storage_options)


class LogStore:
    """The ``_delta_log`` folder of one table, on its :class:`TableStorage`."""

    def __init__(self, storage: TableStorage) -> None:
        self.storage = storage
        self.table_root = storage.root
        #: Commit bytes kept once read, when :meth:`keep_commits` is on (commits never change).
        self._kept_commits: dict[str, bytes] | None = None

    def keep_commits(self) -> None:
        """Keep every commit read from now on, so an operation that replays the
        log and then reads some of its commits again (VACUUM LITE) reads each once."""
        if self._kept_commits is None:
            self._kept_commits = {}

    @staticmethod
    def path(name: str) -> str:
        """The storage path (relative to the table root) of a log file."""
        return f"{LOG_DIR}/{name}"

    # --- reading -------------------------------------------------------------

    def list_from(self, version: int = 0) -> list[LogFile]:
        """Log files of version >= ``version``, sorted by (version, name).

        One listing request that starts after the previous version's names;
        an absent ``_delta_log`` gives an empty list.
        """
        after = f"{version - 1:020d}~" if version > 0 else None  # '~' sorts after every log name's suffix
        out = []
        for meta in self.storage.list_dir(LOG_DIR, after):
            lf = LogFile.parse(meta.name, meta.size, meta.mtime_ms)
            if lf is not None and lf.version >= version:
                out.append(lf)
        out.sort(key=lambda f: (f.version, f.name))
        return out

    async def list_from_async(self, version: int = 0) -> list[LogFile]:
        """:meth:`list_from`, without blocking an event loop."""
        after = f"{version - 1:020d}~" if version > 0 else None
        metas = await self.storage.list_dir_async(LOG_DIR, after)
        files = [LogFile.parse(m.name, m.size, m.mtime_ms) for m in metas]
        return sorted((f for f in files if f is not None and f.version >= version), key=lambda f: (f.version, f.name))

    def read(self, name: str) -> bytes:
        """The bytes of a log file. Raises FileNotFoundError when absent."""
        kept = self._kept_commits
        if kept is None or not _COMMIT_RE.match(name):
            return self.storage.get(self.path(name))
        if name not in kept:
            kept[name] = self.storage.get(self.path(name))
        return kept[name]

    async def read_async(self, name: str) -> bytes:
        return await self.storage.get_async(self.path(name))

    def read_commit(self, version: int) -> bytes:
        return self.read(commit_name(version))

    def open_input_file(self, name: str) -> Any:
        """A pyarrow file of a log file (checkpoint parquet)."""
        return self.storage.open_input_file(self.path(name))

    def exists(self, name: str) -> bool:
        return self.storage.exists(self.path(name))

    def mtime_ms(self, name: str) -> int:
        return self.storage.head(self.path(name)).mtime_ms

    def list_sidecars(self) -> list[ObjectMeta]:
        """Every file in ``_delta_log/_sidecars`` (one listing; empty when absent)."""
        return self.storage.list_dir(self.path(SIDECAR_DIR))

    def read_last_checkpoint(self) -> dict[str, Any] | None:
        """``_last_checkpoint`` as a dict, or None when absent or unreadable.

        It is only a hint (PROTOCOL.md "Last Checkpoint File"): a torn or
        corrupt one must never stop a reader, who then lists instead.
        """
        try:
            return parse_checkpoint_hint(self.read(LAST_CHECKPOINT))
        except FileNotFoundError:
            return None

    async def read_last_checkpoint_async(self) -> dict[str, Any] | None:
        try:
            return parse_checkpoint_hint(await self.read_async(LAST_CHECKPOINT))
        except FileNotFoundError:
            return None

    # --- writing -------------------------------------------------------------

    def put_if_absent(self, version: int, data: bytes) -> bool:
        """Atomically create ``N.json``. False when another writer has it."""
        return self.create_exclusive(commit_name(version), data)

    def create_exclusive(self, name: str, data: bytes) -> bool:
        return self.storage.put_if_absent(self.path(name), data)

    def write_atomic(self, name: str, data: bytes) -> None:
        """Write or replace a file whole (``_last_checkpoint``, checkpoint
        parquet), never seen half-written."""
        self.storage.put(self.path(name), data)

    def write_last_checkpoint(self, info: dict[str, Any]) -> None:
        self.write_atomic(LAST_CHECKPOINT, json.dumps(info, separators=(",", ":")).encode())

    def delete(self, name: str) -> None:
        self.storage.delete(self.path(name))

    def delete_many(self, names: list[str]) -> int:
        return self.storage.delete_many([self.path(n) for n in names])


def parse_checkpoint_hint(raw: bytes) -> dict[str, Any] | None:
    """The content of ``_last_checkpoint``, or None when it is not a usable hint."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        return None
    return data


class TableLog(Protocol):
    """What the core's writers need of a table: where it is, and its log.

    :class:`~airflow_delta_provider.delta.table.DeltaTable` is one. Naming
    this instead of the table lets transactions and checkpoints, which the
    table's façade sits above, take a table without importing it."""

    @property
    def uri(self) -> str: ...

    @property
    def root(self) -> str: ...

    @property
    def log_store(self) -> LogStore: ...
