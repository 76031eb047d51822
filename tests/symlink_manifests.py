"""Reading a table's symlink manifests back, and delta-rs's answer to compare them with."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from airflow_delta_provider.delta import symlink_manifest
from airflow_delta_provider.delta.actions.model import DeletionVector
from airflow_delta_provider.delta.storage import open_storage


def manifests(uri: str, storage_options: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Every manifest under the table, by partition folder: its lines."""
    storage = open_storage(uri, storage_options)
    out = {}
    for meta in storage.list_tree(symlink_manifest.MANIFEST_DIR):
        if not meta.is_dir and meta.name == "manifest":
            folder = meta.path[len(symlink_manifest.MANIFEST_DIR) + 1 : -len("manifest")].rstrip("/")
            out[folder] = storage.get(meta.path).decode().splitlines()
    return out


def delta_rs_manifests(uri: str, storage_options: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """delta-rs's live files of each partition (``file_uris`` with a partition filter).

    On object stores delta-rs spells a space in a key ``%20`` (object_store's
    URL form), and a ``%`` as it is; a manifest holds the key as it is."""
    from deltalake import DeltaTable as RsTable

    rs = RsTable(uri, storage_options=dict(storage_options or {}) or None)

    def uris(filters: Any = None) -> set[str]:
        return {u.replace("%20", " ") if "://" in u else u for u in rs.file_uris(filters)}

    columns = rs.metadata().partition_columns
    if not columns:
        return {"": uris()}
    out: dict[str, set[str]] = {}
    everything = uris()
    adds = pa.table(rs.get_add_actions(flatten=True))
    values = set(zip(*(adds.column(f"partition.{c}").to_pylist() for c in columns)))
    for value in values:
        if None in value:  # delta-rs filters compare values: the null partition is what is left
            continue
        out[_folder(columns, value)] = uris([(c, "=", v) for c, v in zip(columns, value)])
    rest = everything.difference(*out.values())
    if rest:
        out[_folder(columns, (None,) * len(columns))] = rest
    return out


def _folder(columns: list[str], value: tuple[Any, ...]) -> str:
    from airflow_delta_provider.delta.partitions import partition_dir

    return partition_dir(columns, dict(zip(columns, value)))


def as_delta_rs(lines: list[str]) -> set[str]:
    """Manifest lines as delta-rs spells locations (no ``file:`` locally)."""
    return {line.removeprefix("file:") for line in lines}


def current(uri: str, storage_options: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """The manifests as delta-rs spells their lines, by partition folder."""
    return {folder: as_delta_rs(lines) for folder, lines in manifests(uri, storage_options).items()}


#: An inline deletion vector that hides row 0 (a descriptor from delta-spark's tests).
INLINE_DV = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 34, 1)


def remove_partition(table: Any, value: str | None, column: str = "p") -> Any:
    """Commit the removal of every file of one partition through the core (its CommitResult)."""
    snapshot = table.snapshot()
    txn = table.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snapshot)
    now = int(time.time() * 1000)
    txn.add_all([f.remove(now) for f in snapshot.files if f.partition_values[column] == value])
    return txn.commit(metrics={})
