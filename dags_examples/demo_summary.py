"""What ``make demo`` did, printed at its end.

``python dags_examples/demo_summary.py --versions DATA`` prints, before the
demo runs, each Delta table's latest version under ``DATA/delta`` and the
change-data folders under ``DATA/changes``, as JSON;
``python dags_examples/demo_summary.py DATA BEFORE`` then prints, for each
table: its latest version, rows, files and size, its checkpoint, its rows
per partition, and one line per version committed since ``BEFORE`` (that
JSON), with the metrics of each: rows written, updated and deleted, and
what OPTIMIZE and VACUUM did. Then the change-data folders this run wrote
(not those of an earlier run). It reads the tables with the provider's core,
as any reader would; no Spark.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from airflow_delta_provider.delta.cli_table import clip, render
from airflow_delta_provider.delta.table import DeltaTable

#: The metrics a line shows, in this order, when the commit has them.
METRICS = (
    "numOutputRows", "numUpdatedRows", "numDeletedRows", "numTargetRowsInserted", "numTargetRowsUpdated",
    "numTargetRowsDeleted", "numFilesAdded", "numFilesRemoved", "numDeletedFiles", "numFilesToDelete",
    "numDeletionVectorsAdded", "numRemovedFiles", "numAddedFiles",
)  # fmt: skip


def table_summary(path: Path, since: int) -> list[str]:
    table = DeltaTable(str(path))
    snapshot = table.snapshot()
    size_kib = snapshot.size_in_bytes / 1024
    rows = snapshot.num_records
    lines = [
        f"{path}: version {snapshot.version}, {rows if rows is not None else '?'} rows in {snapshot.num_files} "
        f"files ({size_kib:,.1f} KiB)"
    ]
    hint = table.log_store.read_last_checkpoint()
    if hint is not None:
        lines.append(f"  checkpoint at version {hint.get('version')}")
    for column in snapshot.partition_columns:  # from the files' numRecords stats, as the log holds them
        per_value: Counter[str] = Counter()
        for f in snapshot.files:
            per_value[str(f.partition_values.get(column))] += f.num_live_records or 0
        counts = ", ".join(f"{value}: {n}" for value, n in sorted(per_value.items()))
        lines.append(f"  rows per {column}: {counts}")
    commits = sorted((h for h in table.history() if h["version"] > since), key=lambda h: h["version"])
    if not commits:
        lines.append("  no version committed by this run")
        return lines
    first = commits[0]["version"]
    lines.append(f"  versions committed by this run: {first}-{commits[-1]['version']}")
    body = [(h["version"], h.get("operation"), clip(_metrics(h.get("operationMetrics") or {}), 90)) for h in commits]
    lines += ["  " + line for line in render(body, ("version", "operation", "what it did"))]
    return lines


def _metrics(metrics: dict[str, str]) -> str:
    return " ".join(f"{name}={metrics[name]}" for name in METRICS if name in metrics)


def tables(root: Path) -> list[Path]:
    return sorted(p for p in (root / "delta").glob("*") if (p / "_delta_log").is_dir())


def change_folders(root: Path) -> list[str]:
    """The change-data folders under ``root/changes``, relative to it."""
    return sorted(str(p.relative_to(root / "changes")) for p in (root / "changes").glob("*/*") if p.is_dir())


def state(root: Path) -> dict[str, object]:
    """What is there before a run: each table's latest version, by folder name, and the change-data folders."""
    return {
        "versions": {path.name: DeltaTable(str(path)).latest_version() for path in tables(root)},
        "changes": change_folders(root),
    }


def main(data: str, before: str) -> int:
    root = Path(data)
    earlier = json.loads(before)
    since, old_changes = earlier["versions"], set(earlier["changes"])
    print("==> What the demo did")
    for path in tables(root):
        print("\n".join(table_summary(path, since.get(path.name, -1))))
    for name in change_folders(root):
        if name in old_changes:  # an earlier run's
            continue
        folder = root / "changes" / name
        files = sum(1 for _ in folder.rglob("*.parquet"))
        print(f"change data feed written to {folder} ({files} parquet files)")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--versions":
        print(json.dumps(state(Path(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main(*sys.argv[1:3]))
