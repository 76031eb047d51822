"""V2 checkpoint sidecars: the ``sidecar`` action and where its file lives.

A V2 checkpoint (PROTOCOL.md "V2 Spec") may keep its ``add`` and ``remove``
rows in parquet *sidecar* files under ``_delta_log/_sidecars`` and list them
with ``sidecar`` actions. The action's ``path`` is URI-encoded and, when
relative, relative to that folder (writers store the bare name); an absolute
one must still lie in it, since every access goes through the table's
storage. A sidecar that is missing, unreadable or elsewhere is a
:class:`~airflow_delta_provider.delta.errors.CorruptSidecarError` naming it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.delta.actions.fields import LogRecord, dict_if_any, int_or_zero, log
from airflow_delta_provider.delta.errors import CorruptSidecarError
from airflow_delta_provider.delta.log.store import LOG_DIR, SIDECAR_DIR, LogStore

#: Storage folder (relative to the table root) that holds sidecars.
SIDECAR_FOLDER = f"{LOG_DIR}/{SIDECAR_DIR}"

#: The file action columns a sidecar holds.
SIDECAR_COLUMNS = ("add", "remove")


@dataclass(frozen=True)
class SidecarFile(LogRecord):
    """One ``sidecar`` action (PROTOCOL.md "Sidecar File Information").

    Its fields are defined once (:mod:`airflow_delta_provider.delta.actions.fields`):
    the checkpoint's ``sidecar`` column is derived from them."""

    KEY: ClassVar[str] = "sidecar"

    path: str = field(metadata=log("path", pa.string(), required=True))
    size_in_bytes: int = field(metadata=log("sizeInBytes", pa.int64(), decode=int_or_zero))
    modification_time: int = field(metadata=log("modificationTime", pa.int64(), decode=int_or_zero))
    #: A parquet map comes back as (key, value) pairs: ``dict_if_any`` takes both.
    tags: dict[str, str] | None = field(
        default=None, metadata=log("tags", pa.map_(pa.string(), pa.string()), decode=dict_if_any)
    )

    @property
    def name(self) -> str:
        """The decoded file name, as listed in ``_delta_log/_sidecars``."""
        return posixpath.basename(unquote(self.path))


def sidecar_name(version: int, part: int, parts: int, unique: str) -> str:
    """delta-spark's sidecar name: ``<version>.checkpoint.<part>.<parts>.<uuid>.parquet``."""
    return f"{version:020d}.checkpoint.{part:010d}.{parts:010d}.{unique}.parquet"


def sidecar_action_path(name: str) -> str:
    """The ``sidecar.path`` to write for a file named ``name``: the bare name, URI-encoded."""
    return quote(name)


def sidecar_storage_path(store: LogStore, sidecar: SidecarFile, checkpoint: str) -> str:
    """The storage path (relative to the table root) of ``sidecar``.

    Raises :class:`CorruptSidecarError` for a path outside ``_delta_log/_sidecars``.
    """
    path = sidecar.path
    if path.startswith("/") or "://" in path[:16] or path.startswith("file:"):
        rel = store.storage.location.relative(path)
    else:
        rel = posixpath.normpath(f"{SIDECAR_FOLDER}/{unquote(path)}")
    if rel is None or not rel.startswith(SIDECAR_FOLDER + "/"):
        raise CorruptSidecarError(
            f"checkpoint {checkpoint} refers to sidecar {path!r}, which is not in {SIDECAR_FOLDER} of "
            f"{store.table_root}"
        )
    return rel


def sidecar_footer(
    store: LogStore, sidecar: SidecarFile, checkpoint: str
) -> tuple[str, pq.FileMetaData, pa.Buffer | None]:
    """The storage path and parquet footer of one sidecar of ``checkpoint``,
    and its bytes when reading the footer fetched them all (:func:`in_memory`).

    Reading the footer proves the sidecar is there and whole (a torn file has
    no footer) before its rows are needed.
    """
    rel = sidecar_storage_path(store, sidecar, checkpoint)
    try:
        with store.storage.open_input_file(rel) as f:
            return rel, pq.read_metadata(f), in_memory(f)
    except FileNotFoundError:
        raise CorruptSidecarError(
            f"sidecar {rel} of checkpoint {checkpoint} is missing from {store.table_root}"
        ) from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise CorruptSidecarError(f"cannot read sidecar {rel} of checkpoint {checkpoint}: {exc}") from exc


def in_memory(fh: Any) -> pa.Buffer | None:
    """The whole file behind ``fh`` when it is already in memory: an object
    store's input file is one whole-object GET held in a ``pa.BufferReader``
    (:meth:`~airflow_delta_provider.delta.storage.store.TableStorage.open_input_file`),
    whose bytes a later read can reuse instead of fetching them again. None
    for a file on disk, which is read where it lies."""
    if not isinstance(fh, pa.BufferReader):
        return None
    fh.seek(0)
    return fh.read_buffer()


__all__ = [
    "SIDECAR_COLUMNS",
    "SIDECAR_FOLDER",
    "SidecarFile",
    "in_memory",
    "sidecar_action_path",
    "sidecar_footer",
    "sidecar_name",
    "sidecar_storage_path",
]
