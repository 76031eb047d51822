"""Reading a checkpoint into log replay, whatever its kind.

PROTOCOL.md "Checkpoints" allows a classic single parquet file and a
multi-part set (both V1 spec unless the classic file carries V2 columns), and
UUID-named V2 checkpoints, ``<version>.checkpoint.<uuid>.json`` or
``.parquet``. A V2 spec file holds the non-file actions, one
``checkpointMetadata`` and either the file actions themselves or ``sidecar``
actions naming parquet files in ``_delta_log/_sidecars`` that hold them
(:mod:`.sidecars`). A classic-named file may follow the V2 spec too (the
protocol's "compat" checkpoint), so every single-file checkpoint is read for
sidecars. Every file is read through the table's storage.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_delta_provider.delta.actions.model import Action, action_from_json
from airflow_delta_provider.delta.errors import CorruptCheckpointError, CorruptSidecarError
from airflow_delta_provider.delta.log.replay import ACTION_COLUMNS, LogReplay
from airflow_delta_provider.delta.log.sidecars import SIDECAR_COLUMNS, SidecarFile, in_memory, sidecar_footer
from airflow_delta_provider.delta.log.store import LogFile, LogStore

_V2_COLUMNS = ("checkpointMetadata", "sidecar")
#: The non-file actions, read when a snapshot loads.
_STATE_COLUMNS = tuple(c for c in ACTION_COLUMNS if c not in SIDECAR_COLUMNS)


def apply_checkpoint(store: LogStore, files: Iterable[LogFile], replay: LogReplay) -> None:
    """Apply a whole checkpoint (its files, in part order) to ``replay``.

    Call it before any commit is applied. Raises
    :class:`~airflow_delta_provider.delta.errors.CorruptCheckpointError` (or its
    ``CorruptSidecarError``) naming the file that cannot be read.
    """
    apply_checkpoint_state(store, files, replay).apply(replay)


def apply_checkpoint_state(store: LogStore, files: Iterable[LogFile], replay: LogReplay) -> CheckpointFileActions:
    """Apply a checkpoint's protocol, metadata, ``txn`` and domain actions to ``replay``;
    return what reads its file actions, which may come after the commits are applied.

    A snapshot needs its protocol and metadata first, and often nothing else:
    with 100,000 files, the ``add`` column is most of the checkpoint. Every
    parquet file's footer is read here, so a missing or torn file (a torn file
    has no footer) is found while the snapshot loads and can be skipped.
    """
    parts: list[_ParquetPart] = []
    for f in files:
        if f.is_json:
            actions, sidecars = _read_json(store, f, with_actions=True)
            replay.apply(actions)
        else:
            footer, data = _footer(store, f)
            part = _ParquetPart(store.path(f.name), footer, f"checkpoint {f.name}", CorruptCheckpointError, data)
            table = part.read(store, (*_STATE_COLUMNS, *_V2_COLUMNS))
            replay.apply_checkpoint_table(table)
            sidecars = _sidecars_of(table, f)
            parts.append(part)
        for sidecar in sidecars:
            rel, footer, data = sidecar_footer(store, sidecar, f.name)
            parts.append(_ParquetPart(rel, footer, f"sidecar {rel} of checkpoint {f.name}", CorruptSidecarError, data))
    return CheckpointFileActions(store, parts)


class CheckpointFileActions:
    """The ``add`` and ``remove`` rows of a checkpoint's parquet files and
    sidecars, read by :meth:`apply`. Every file is read before any row is
    applied, so a failed read leaves the replay as it was."""

    def __init__(self, store: LogStore, parts: list[_ParquetPart]) -> None:
        self._store = store
        self._parts = parts

    def apply(self, replay: LogReplay) -> None:
        tables = [part.read(self._store, SIDECAR_COLUMNS) for part in self._parts]
        for table in tables:
            replay.apply_checkpoint_table(table)


def sidecar_references(store: LogStore, f: LogFile) -> list[SidecarFile]:
    """The sidecars one checkpoint file refers to, reading nothing else of it."""
    if f.is_json:
        return _read_json(store, f, with_actions=False)[1]
    footer, data = _footer(store, f)
    part = _ParquetPart(store.path(f.name), footer, f"checkpoint {f.name}", CorruptCheckpointError, data)
    return _sidecars_of(part.read(store, _V2_COLUMNS), f)


@dataclass(frozen=True)
class _ParquetPart:
    """A parquet file of a checkpoint whose footer has been read.

    On an object store reading the footer fetched the whole object (see
    :func:`in_memory`): ``data`` keeps those bytes, so the columns are read
    from them and not fetched again. On a local disk it is None and every
    read opens the file."""

    path: str  # relative to the table root
    footer: pq.FileMetaData
    label: str  # "checkpoint <name>" or "sidecar <path> of checkpoint <name>"
    error: type[CorruptCheckpointError]
    data: pa.Buffer | None = None

    def read(self, store: LogStore, wanted: Iterable[str]) -> pa.Table:
        """The columns of ``wanted`` that the file has (none missing is an error)."""
        names = self.footer.schema.to_arrow_schema().names
        columns = [c for c in wanted if c in names]
        try:
            source = pa.BufferReader(self.data) if self.data is not None else store.storage.open_input_file(self.path)
            with source as fh:
                return pq.ParquetFile(fh, metadata=self.footer).read(columns=columns)
        except FileNotFoundError:
            raise self.error(f"{self.label} disappeared from {store.table_root} while reading it") from None
        except (OSError, pa.ArrowInvalid) as exc:
            raise self.error(f"cannot read {self.label}: {exc}") from exc


def _footer(store: LogStore, f: LogFile) -> tuple[pq.FileMetaData, pa.Buffer | None]:
    """The footer of a checkpoint file, and its bytes when they are in memory already."""
    try:
        with store.open_input_file(f.name) as fh:
            return pq.read_metadata(fh), in_memory(fh)
    except (OSError, pa.ArrowInvalid) as exc:
        raise CorruptCheckpointError(f"cannot read checkpoint {f.name}: {exc}") from exc


def _sidecars_of(table: pa.Table, f: LogFile) -> list[SidecarFile]:
    if "checkpointMetadata" in table.column_names:
        meta = table.column("checkpointMetadata")
        for row in meta.filter(pc.is_valid(meta)).to_pylist():
            _check_version(row, f)
    if "sidecar" not in table.column_names:
        return []
    column = table.column("sidecar")
    try:
        return [SidecarFile.from_json(row) for row in column.filter(pc.is_valid(column)).to_pylist()]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint {f.name} has a malformed sidecar action: {exc!r}") from exc


def _read_json(store: LogStore, f: LogFile, *, with_actions: bool) -> tuple[list[Action], list[SidecarFile]]:
    """The actions (when asked for) and the sidecars of a JSON V2 checkpoint."""
    try:
        text = store.read(f.name).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(f"cannot read checkpoint {f.name}: {exc}") from exc
    actions: list[Action] = []
    sidecars: list[SidecarFile] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "sidecar" in row:
                sidecars.append(SidecarFile.from_json(row["sidecar"]))
            elif "checkpointMetadata" in row:
                _check_version(row["checkpointMetadata"], f)
            elif with_actions:
                action = action_from_json(row)
                if action is not None:
                    actions.append(action)
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptCheckpointError(f"checkpoint {f.name} line {number} cannot be parsed: {exc!r}") from exc
    return actions, sidecars


def _check_version(checkpoint_metadata: dict[str, Any], f: LogFile) -> None:
    """A ``checkpointMetadata`` must name the version of its file."""
    version = checkpoint_metadata.get("version")
    if version is not None and int(version) != f.version:
        raise CorruptCheckpointError(f"checkpoint {f.name} says it holds version {version}, its name says {f.version}")


__all__ = ["CheckpointFileActions", "apply_checkpoint", "apply_checkpoint_state", "sidecar_references"]
