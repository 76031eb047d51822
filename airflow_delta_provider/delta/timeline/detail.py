"""One version in detail: its ``commitInfo``, the files it adds and removes,
its schema change, and the table as of that version (DESCRIBE DETAIL).

The commit's own file gives the first three; the table as of the version is
a time-travel snapshot (checkpoint plus commits). The file lists are bounded:
a commit that rewrites 100,000 files is described by its counts and its
first :data:`MAX_FILES` files of each kind.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.actions.model import CommitInfo, parse_commit
from airflow_delta_provider.delta.errors import VersionNotFoundError
from airflow_delta_provider.delta.log.commit_summary import CommitSummary, FileChange
from airflow_delta_provider.delta.table_info import detail

if TYPE_CHECKING:
    from airflow_delta_provider.delta.table import DeltaTable

#: Files of each kind (added, removed) listed at most.
MAX_FILES = 200


def version_detail(table: DeltaTable, version: int, max_files: int = MAX_FILES) -> dict[str, Any]:
    """The document of ``version``: ``commitInfo``, ``added`` / ``removed`` (files,
    with ``numAdded`` / ``numRemoved`` their full counts), ``schemaChange`` (None
    when the commit keeps the schema) and ``describe`` (DESCRIBE DETAIL as of it)."""
    try:
        data = table.log_store.read_commit(version)
    except FileNotFoundError:
        raise VersionNotFoundError(f"version {version} of {table.uri} has no commit file in _delta_log") from None
    summary = CommitSummary.parse(version, data)
    info = next((a for a in parse_commit(data) if isinstance(a, CommitInfo)), None)
    added = [f for f in summary.files if f.kind == "add"]
    removed = [f for f in summary.files if f.kind == "remove"]
    snapshot = table.snapshot(version)
    described = detail(snapshot)
    change = None
    if summary.metadata is not None:
        before = table.snapshot(version - 1).schema if version > 0 else None
        change = schema_change(before, json.loads(summary.metadata.schema_string))
    return {
        "version": version,
        "commitInfo": info.raw if info is not None else {},
        "numAdded": len(added),
        "numRemoved": len(removed),
        "added": [_file(f) for f in added[:max_files]],
        "removed": [_file(f) for f in removed[:max_files]],
        "schemaChange": change,
        "describe": described,
    }


def schema_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any] | None:
    """The top-level fields ``after`` adds, drops and changes against ``before``
    (Delta schema JSON); None when they are the same. A new table adds every field."""
    old = {f["name"]: f for f in (before or {}).get("fields", [])}
    new = {f["name"]: f for f in after.get("fields", [])}
    change = {
        "added": [name for name in new if name not in old],
        "dropped": [name for name in old if name not in new],
        "changed": [
            {"name": name, "before": _type(old[name]), "after": _type(new[name])}
            for name in new
            if name in old and _type(old[name]) != _type(new[name])
        ],
    }
    return change if any(change.values()) else None


def _type(field: dict[str, Any]) -> str:
    kind = field.get("type")
    text = kind if isinstance(kind, str) else json.dumps(kind, sort_keys=True)
    return text + ("" if field.get("nullable", True) else " not null")


def _file(change: FileChange) -> dict[str, Any]:
    f = change.file
    return {
        "path": f.path,
        "size": f.size,
        "partitionValues": f.partition_values if change.partition_known else None,
        "numRecords": f.num_records,
        "dataChange": change.data_change,
    }


__all__ = ["MAX_FILES", "schema_change", "version_detail"]
