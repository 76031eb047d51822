"""Reading and writing ``_delta_log`` files through ``pyarrow.fs``.

The log store is the only module that touches the storage of the log. Every
other module sees versions and bytes. Commits are claimed with an atomic
put-if-absent, the one primitive Delta's concurrency control needs (PROTOCOL.md
"Creation of New Log Entries"). On the local filesystem that is ``os.link`` of a
fully written temporary file: a hard link fails with ``EEXIST`` when the name
is taken, and a reader never sees a half-written commit.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from airflow_delta_provider.delta.errors import CommitFailedError, InvalidInputError

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"

_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
_V2_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.[^.]+\.(?:json|parquet)$")
_COMPACTION_RE = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC_RE = re.compile(r"^(\d{20})\.crc$")


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


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


def resolve_table(uri: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root path of a table given as a path or a URI.

    Plain paths and ``file://`` URIs map to the local filesystem (made absolute);
    other schemes go to ``pyarrow.fs.FileSystem.from_uri``.
    """
    text = os.fspath(uri)
    if not text:
        raise InvalidInputError("table path is empty")
    parsed = urlparse(text)
    if parsed.scheme in ("", "file"):
        path = unquote(parsed.path) if parsed.scheme == "file" else text
        return pafs.LocalFileSystem(), os.path.abspath(path).rstrip("/") or "/"
    try:
        fs, path = pafs.FileSystem.from_uri(text)
    except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise InvalidInputError(f"cannot open table location {text!r}: {exc}") from exc
    return fs, path.rstrip("/")


class LogStore:
    """The ``_delta_log`` folder of one table, on one ``pyarrow.fs`` filesystem."""

    def __init__(self, fs: pafs.FileSystem, table_root: str) -> None:
        self.fs = fs
        self.table_root = table_root
        self.log_dir = f"{table_root}/{LOG_DIR}"
        self._local = isinstance(fs, pafs.LocalFileSystem)

    def path(self, name: str) -> str:
        return f"{self.log_dir}/{name}"

    # --- reading -------------------------------------------------------------

    def list_from(self, version: int = 0) -> list[LogFile]:
        """Log files of version >= ``version``, sorted by (version, name).

        One listing call; an absent ``_delta_log`` gives an empty list.
        """
        start = f"{version:020d}"
        if self._local:
            entries = self._list_local(start)
        else:
            selector = pafs.FileSelector(self.log_dir, allow_not_found=True, recursive=False)
            entries = [
                (info.base_name, info.size or 0, _mtime_ms(info))
                for info in self.fs.get_file_info(selector)
                if info.type == pafs.FileType.File
            ]
        out = []
        for name, size, mtime in entries:
            if name[:20] < start:
                continue
            lf = LogFile.parse(name, size, mtime)
            if lf is not None and lf.version >= version:
                out.append(lf)
        out.sort(key=lambda f: (f.version, f.name))
        return out

    def _list_local(self, start: str) -> list[tuple[str, int, int]]:
        try:
            it = os.scandir(self.log_dir)
        except FileNotFoundError:
            return []
        out = []
        with it:
            for entry in it:
                name = entry.name
                # Names sort by version, so older files are skipped unstat'ed.
                if name[:1].isdigit() and name[:20] >= start:
                    st = entry.stat()
                    out.append((name, st.st_size, st.st_mtime_ns // 1_000_000))
        return out

    def read(self, name: str) -> bytes:
        """The bytes of a log file. Raises FileNotFoundError when absent."""
        if self._local:
            with open(self.path(name), "rb") as f:
                return f.read()
        with self.fs.open_input_stream(self.path(name)) as f:
            return f.read()

    def read_commit(self, version: int) -> bytes:
        return self.read(commit_name(version))

    def exists(self, name: str) -> bool:
        if self._local:
            return os.path.exists(self.path(name))
        return self.fs.get_file_info(self.path(name)).type == pafs.FileType.File

    def mtime_ms(self, name: str) -> int:
        if self._local:
            return os.stat(self.path(name)).st_mtime_ns // 1_000_000
        return _mtime_ms(self.fs.get_file_info(self.path(name)))

    def read_last_checkpoint(self) -> dict[str, Any] | None:
        """``_last_checkpoint`` as a dict, or None when absent or unreadable.

        It is only a hint (PROTOCOL.md "Last Checkpoint File"): a torn or
        corrupt one must never stop a reader, who then lists instead.
        """
        try:
            data = json.loads(self.read(LAST_CHECKPOINT))
        except (FileNotFoundError, ValueError, UnicodeDecodeError, OSError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("version"), int):
            return None
        return data

    # --- writing -------------------------------------------------------------

    def put_if_absent(self, version: int, data: bytes) -> bool:
        """Atomically create ``N.json``. False when another writer has it."""
        return self.create_exclusive(commit_name(version), data)

    def create_exclusive(self, name: str, data: bytes) -> bool:
        target = self.path(name)
        if not self._local:
            # Object stores need a conditional create (S3 If-None-Match, GCS
            # generation match); pyarrow.fs exposes none, so refuse rather than
            # silently risk a lost commit.
            raise CommitFailedError(
                f"{type(self.fs).type_name} has no atomic put-if-absent through pyarrow.fs; "
                "commits are supported on the local filesystem only"
            )
        os.makedirs(self.log_dir, exist_ok=True)
        tmp = self.path(f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            return True
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def write_atomic(self, name: str, data: bytes) -> None:
        """Write or replace a file whole: temp file, then rename over it.

        Used for ``_last_checkpoint`` and checkpoint parquet files, which may
        be overwritten but must never be seen half-written.
        """
        target = self.path(name)
        if not self._local:
            with self.fs.open_output_stream(target) as f:
                f.write(data)
            return
        os.makedirs(self.log_dir, exist_ok=True)
        tmp = self.path(f".{name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)

    def write_last_checkpoint(self, info: dict[str, Any]) -> None:
        self.write_atomic(LAST_CHECKPOINT, json.dumps(info, separators=(",", ":")).encode())

    def delete(self, name: str) -> None:
        if self._local:
            try:
                os.unlink(self.path(name))
            except FileNotFoundError:
                pass
        else:
            self.fs.delete_file(self.path(name))


def _mtime_ms(info: pafs.FileInfo) -> int:
    mt = info.mtime_ns
    return int(mt // 1_000_000) if mt is not None else 0
