"""Delta logs written file by file, fast enough for 10,000 versions.

The sensor and trigger tests need long, realistic logs, and they must not
depend on the core's transaction code. Each commit is written with a plain
file write in delta-spark's shape: version 0 holds ``commitInfo``,
``protocol`` (1/2) and ``metaData``; every version adds one file. No data or
checkpoint parquet is written: the probes never read them.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

SCHEMA = {
    "type": "struct",
    "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
}
BASE_TS = 1_700_000_000_000


def commit_path(root: Path, version: int) -> Path:
    return Path(root) / "_delta_log" / f"{version:020d}.json"


#: The schema of a table partitioned by ``ds`` (``partition_value`` given at version 0).
PARTITIONED_SCHEMA = {
    "type": "struct",
    "fields": [*SCHEMA["fields"], {"name": "ds", "type": "string", "nullable": True, "metadata": {}}],
}


def write_commit(
    root: Path, version: int, operation: str | None = None, *, partition_value: str | None = None
) -> int:
    """Write commit ``version`` (must be new); returns its commitInfo timestamp.

    With ``partition_value``, the table is partitioned by ``ds`` (when this is
    version 0) and the commit's file lies in partition ``ds=partition_value``.
    """
    timestamp = BASE_TS + version * 1000
    operation = operation or ("CREATE TABLE" if version == 0 else "WRITE")
    lines: list[dict] = [
        {
            "commitInfo": {
                "timestamp": timestamp,
                "operation": operation,
                "operationParameters": {"mode": "Append"},
                "isBlindAppend": True,
                "txnId": str(uuid.UUID(int=version)),
            }
        }
    ]
    if version == 0:
        lines.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        lines.append(
            {
                "metaData": {
                    "id": str(uuid.UUID(int=2**64)),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(SCHEMA if partition_value is None else PARTITIONED_SCHEMA),
                    "partitionColumns": [] if partition_value is None else ["ds"],
                    "configuration": {},
                    "createdTime": BASE_TS,
                }
            }
        )
    lines.append(
        {
            "add": {
                "path": f"part-{version:05d}-{uuid.UUID(int=version)}-c000.snappy.parquet",
                "partitionValues": {} if partition_value is None else {"ds": partition_value},
                "size": 500,
                "modificationTime": timestamp,
                "dataChange": True,
                "stats": json.dumps(
                    {"numRecords": 1, "minValues": {"id": version}, "maxValues": {"id": version},
                     "nullCount": {"id": 0}}
                ),
            }
        }
    )
    path = commit_path(root, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    # "x" mode: a test that rewrites a version is a broken test.
    with open(path, "x") as f:
        f.write("\n".join(json.dumps(line) for line in lines) + "\n")
    return timestamp


def write_last_checkpoint(root: Path, version: int) -> None:
    path = Path(root) / "_delta_log" / "_last_checkpoint"
    path.write_text(json.dumps({"version": version, "size": version + 3}))


def write_log(
    root: Path, versions: int, checkpoint_interval: int | None = 10, *, partition_value: str | None = None
) -> Path:
    """A table with versions ``0..versions-1``.

    With ``checkpoint_interval``, ``_last_checkpoint`` names the last multiple
    of it (as delta-spark's post-commit checkpoints would), when there is one.
    With ``partition_value``, it is partitioned by ``ds`` and every file lies
    in that partition.
    """
    root = Path(root)
    for version in range(versions):
        write_commit(root, version, partition_value=partition_value)
    if checkpoint_interval and versions - 1 >= checkpoint_interval:
        write_last_checkpoint(root, (versions - 1) // checkpoint_interval * checkpoint_interval)
    return root


def delete_commits(root: Path, below: int) -> None:
    """Remove commits older than ``below``, as log cleanup does."""
    for version in range(below):
        os.unlink(commit_path(root, version))


class LogCalls(dict):
    """Counts of storage requests by method name, filled by :func:`count_log_calls`."""

    @property
    def total(self) -> int:
        return sum(self.values())

    @property
    def listings(self) -> int:
        return sum(n for name, n in self.items() if name.startswith("list"))


#: The storage methods that each make one request (an async twin counts as one).
_REQUESTS = ("list_dir", "list_dir_async", "list_top", "list_tree", "get", "get_async", "head", "head_async", "exists")


def count_log_calls(monkeypatch) -> LogCalls:
    """Count every storage request, on every backend (``_last_checkpoint`` reads included).

    Each backend's own methods are counted; one that delegates to another
    (``exists`` to ``head`` on object stores, the local async twins to the
    blocking ones) counts once.
    """
    from airflow_delta_provider.delta.storage import LocalStorage, ObjectStorage

    calls = LogCalls()
    for cls in (LocalStorage, ObjectStorage):
        for name in _REQUESTS:
            original = cls.__dict__.get(name)
            if original is None:
                continue
            if name.endswith("_async"):

                async def counted(self, *args, _name=name, _original=original, **kwargs):
                    calls[_name] = calls.get(_name, 0) + 1
                    return await _original(self, *args, **kwargs)

            else:

                def counted(self, *args, _name=name, _original=original, **kwargs):
                    calls[_name] = calls.get(_name, 0) + 1
                    return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, counted)
    return calls


def remove_versions_from(root: Path, version: int) -> None:
    """Undo commits a test added to a shared log."""
    while commit_path(root, version).exists():
        os.unlink(commit_path(root, version))
        version += 1


def local_log_path(table, name: str) -> str:
    """The filesystem path of a log file of a local table (for tests that age or damage it)."""
    return os.path.join(table.root, "_delta_log", name)
