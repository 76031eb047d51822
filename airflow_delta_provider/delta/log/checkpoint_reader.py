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
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_delta_provider.delta.actions.model import Action, action_from_json
from airflow_delta_provider.delta.errors import CorruptCheckpointError
from airflow_delta_provider.delta.log.replay import ACTION_COLUMNS, LogReplay
from airflow_delta_provider.delta.log.sidecars import SidecarFile, read_sidecar
from airflow_delta_provider.delta.log.store import LogFile, LogStore

_V2_COLUMNS = ("checkpointMetadata", "sidecar")


def apply_checkpoint(store: LogStore, files: Iterable[LogFile], replay: LogReplay) -> None:
    """Apply a checkpoint (its files, in part order) to ``replay``.

    Call it before any commit is applied. Raises
    :class:`~airflow_delta_provider.delta.errors.CorruptCheckpointError` (or its
    ``CorruptSidecarError``) naming the file that cannot be read.
    """
    for f in files:
        if f.is_json:
            actions, sidecars = _read_json(store, f, with_actions=True)
            replay.apply(actions)
        else:
            table = _read_parquet(store, f, (*ACTION_COLUMNS, *_V2_COLUMNS))
            replay.apply_checkpoint_table(table)
            sidecars = _sidecars_of(table, f)
        for sidecar in sidecars:
            replay.apply_checkpoint_table(read_sidecar(store, sidecar, f.name))


def sidecar_references(store: LogStore, f: LogFile) -> list[SidecarFile]:
    """The sidecars one checkpoint file refers to, reading nothing else of it."""
    if f.is_json:
        return _read_json(store, f, with_actions=False)[1]
    return _sidecars_of(_read_parquet(store, f, _V2_COLUMNS), f)


def _read_parquet(store: LogStore, f: LogFile, wanted: Iterable[str]) -> pa.Table:
    try:
        with store.open_input_file(f.name) as fh:
            present = pq.read_schema(fh).names
            return pq.read_table(fh, columns=[c for c in wanted if c in present])
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
        raise CorruptCheckpointError(
            f"checkpoint {f.name} says it holds version {version}, its name says {f.version}"
        )


__all__ = ["apply_checkpoint", "sidecar_references"]
