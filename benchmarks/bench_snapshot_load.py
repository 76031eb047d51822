"""Snapshot load time: the core against delta-rs (``deltalake``), same run.

Three log shapes (issue 2, "Measure"):

* (a) 1,000 commits and no checkpoint: pure JSON replay;
* (b) 10,000 commits with a checkpoint every 10: listing plus the newest
  checkpoint and the few commits after it;
* (c) one checkpoint holding 100,000 adds: parquet checkpoint decoding;
* (d) as (c), on a table with column mapping (``name`` mode: stats keyed by
  physical names) and a v2 checkpoint whose 100,000 adds sit in sidecar
  files (issue 10). Its checkpoint is written by the core's own writer,
  then read by both.

The logs are written directly (NDJSON commits; checkpoints with pyarrow in the
schema of delta-protocol-notes section 1), with delta-spark-like add actions:
relative path, empty partitionValues, size, modificationTime, dataChange and a
stats JSON string. No data files are written: loading a snapshot reads only
the log. Timed: ``DeltaTable(p).snapshot()`` and its list of file paths
(``file_paths()``), against ``deltalake.DeltaTable(p)`` and ``.file_uris()``:
both load the state and hand back one string per live file. A third column
times turning every live file into an ``AddFile`` object as well
(``snapshot.files``), which the Spark engine does before pruning.

Run ``python benchmarks/bench_snapshot_load.py [--quick] [--reps N]``. The tables
are cached in ``benchmarks/.data/``; results go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from airflow_delta_provider.delta.checkpoint.rows import CHECKPOINT_SCHEMA  # noqa: E402

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
            {"name": "value", "type": "double", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
)
BASE_TIME = 1_700_000_000_000
ROWS_PER_FILE = 1000


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    commits: int  # versions 0..commits-1 (a, b); for (c), commits after the create
    adds_per_commit: int
    checkpoint_interval: int | None  # None: no checkpoint at all
    target: float  # the target for ours / delta-rs
    empty_create: bool = False  # version 0 only creates the table (no adds)
    mapped_v2: bool = False  # column mapping and a v2 checkpoint with sidecars

    @property
    def files(self) -> int:
        return (self.commits - (1 if self.empty_create else 0)) * self.adds_per_commit

    def adds_of(self, version: int) -> range:
        first = version - (1 if self.empty_create else 0)
        if first < 0:
            return range(0)
        return range(first * self.adds_per_commit, (first + 1) * self.adds_per_commit)


def cases(quick: bool) -> list[Case]:
    scale = 10 if quick else 1
    return [
        Case("a", f"{1000 // scale:,} commits, no checkpoint", 1000 // scale, 1, None, 2.0),
        Case("b", f"{10000 // scale:,} commits, checkpoint every 10", 10000 // scale, 1, 10, 1.0),
        Case("c", f"checkpoint holding {100_000 // scale:,} adds", 11, 10_000 // scale, 10, 1.0, empty_create=True),
        Case(
            "d",
            f"column mapping, v2 checkpoint, sidecars holding {100_000 // scale:,} adds",
            11,
            10_000 // scale,
            10,
            1.0,
            empty_create=True,
            mapped_v2=True,
        ),
    ]


# --- Building the logs ----------------------------------------------------------


def _add(i: int, names: dict[str, str] | None = None) -> dict:
    """An add; ``names`` renames the stats keys (column mapping's physical names)."""
    lo = i * ROWS_PER_FILE
    hi = lo + ROWS_PER_FILE - 1
    stats = {
        "numRecords": ROWS_PER_FILE,
        "minValues": {"id": lo, "name": f"name-{lo:09d}", "value": lo * 0.5, "ts": "2024-01-01T00:00:00.000Z"},
        "maxValues": {"id": hi, "name": f"name-{hi:09d}", "value": hi * 0.5, "ts": "2024-12-31T23:59:59.999Z"},
        "nullCount": {"id": 0, "name": i % 5, "value": 0, "ts": 0},
    }
    if names:
        stats = {k: ({names[c]: v for c, v in x.items()} if isinstance(x, dict) else x) for k, x in stats.items()}
    return {
        "path": f"part-{i % 100000:05d}-{uuid.UUID(int=i)}-c000.snappy.parquet",
        "partitionValues": {},
        "size": 100_000 + i % 9973,
        "modificationTime": BASE_TIME + i,
        "dataChange": True,
        "stats": json.dumps(stats, separators=(",", ":")),
    }


def _line(key: str, body: dict) -> str:
    return json.dumps({key: body}, separators=(",", ":"))


def _commit_info(version: int, n_adds: int) -> dict:
    info = {
        "timestamp": BASE_TIME + version,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append" if version else "ErrorIfExists", "partitionBy": "[]"},
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
        "operationMetrics": {"numFiles": str(n_adds), "numOutputRows": str(n_adds * ROWS_PER_FILE)},
        "engineInfo": "benchmark",
        "txnId": str(uuid.UUID(int=version)),
    }
    if version:
        info["readVersion"] = version - 1
    return info


_PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 2}
_METADATA = {
    "id": "00000000-0000-0000-0000-00000000bench",
    "format": {"provider": "parquet", "options": {}},
    "schemaString": SCHEMA_STRING,
    "partitionColumns": [],
    "configuration": {},
    "createdTime": BASE_TIME,
}

#: Case (d): column mapping and v2 checkpoints, at reader 3 / writer 7.
_PHYSICAL = {f["name"]: f"col-{uuid.UUID(int=n + 1)}" for n, f in enumerate(json.loads(SCHEMA_STRING)["fields"])}
_MAPPED_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["columnMapping", "v2Checkpoint"],
    "writerFeatures": ["appendOnly", "columnMapping", "invariants", "v2Checkpoint"],
}
_MAPPED_METADATA = {
    **_METADATA,
    "schemaString": json.dumps(
        {
            "type": "struct",
            "fields": [
                {
                    **f,
                    "metadata": {
                        "delta.columnMapping.id": n + 1,
                        "delta.columnMapping.physicalName": _PHYSICAL[f["name"]],
                    },
                }
                for n, f in enumerate(json.loads(SCHEMA_STRING)["fields"])
            ],
        }
    ),
    "configuration": {
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "4",
        "delta.checkpointPolicy": "v2",
    },
}

# The checkpoint files are written here, not by the core's writer, so the
# benchmark does not depend on it; the schema is the one the core writes.
_ADD = CHECKPOINT_SCHEMA.field("add").type


def _add_array(adds: list[dict]) -> pa.Array:
    rows = [
        {**a, "partitionValues": list(a["partitionValues"].items()), "dataChange": False, "deletionVector": None}
        for a in adds
    ]
    return pa.array(rows, type=_ADD)


def _header_table() -> pa.Table:
    """The protocol and metaData rows of a checkpoint."""
    md = {
        **_METADATA,
        "format": {"provider": "parquet", "options": []},
        "configuration": list(_METADATA["configuration"].items()),
    }
    cols = {}
    for field in CHECKPOINT_SCHEMA:
        if field.name == "protocol":
            cols[field.name] = pa.array([_PROTOCOL, None], type=field.type)
        elif field.name == "metaData":
            cols[field.name] = pa.array([None, md], type=field.type)
        else:
            cols[field.name] = pa.nulls(2, field.type)
    return pa.table(cols, schema=CHECKPOINT_SCHEMA)


def _checkpoint(log: Path, version: int, all_adds: pa.Array, n_live: int) -> None:
    """Write ``version``'s classic checkpoint: protocol, metaData, the first
    ``n_live`` adds; ``dataChange=false``; deletionVector null."""
    adds = all_adds.slice(0, n_live)
    cols = {f.name: (adds if f.name == "add" else pa.nulls(n_live, f.type)) for f in CHECKPOINT_SCHEMA}
    table = pa.concat_tables([_header_table(), pa.table(cols, schema=CHECKPOINT_SCHEMA)])
    pq.write_table(table, log / f"{version:020d}.checkpoint.parquet", compression="snappy")
    last = {
        "version": version,
        "size": table.num_rows,
        "sizeInBytes": (log / f"{version:020d}.checkpoint.parquet").stat().st_size,
        "numOfAddFiles": n_live,
    }
    (log / "_last_checkpoint").write_text(json.dumps(last))


def _core_checkpoint(path: Path, version: int) -> None:
    """The core's v2 checkpoint of ``version`` (sidecars of 50,000 adds at most)."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(str(path))
    write_checkpoint(table, table.snapshot(version=version))
    if not any((path / "_delta_log" / "_sidecars").glob("*.parquet")):
        raise SystemExit("case d: the core wrote no sidecar")


def build(case: Case, root: Path) -> Path:
    """Write the table for ``case`` under ``root`` once; reuse it afterwards."""
    path = root / f"{case.key}-{case.commits}x{case.adds_per_commit}-cp{case.checkpoint_interval or 0}"
    marker = path / ".complete"
    if marker.exists():
        return path
    log = path / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for f in log.iterdir():
        f.unlink()
    adds = [_add(i, _PHYSICAL if case.mapped_v2 else None) for i in range(case.files)]
    add_array = _add_array(adds) if case.checkpoint_interval and not case.mapped_v2 else None
    protocol, metadata = (_MAPPED_PROTOCOL, _MAPPED_METADATA) if case.mapped_v2 else (_PROTOCOL, _METADATA)
    for version in range(case.commits):
        batch = [adds[i] for i in case.adds_of(version)]
        lines = [_line("commitInfo", _commit_info(version, len(batch)))]
        if version == 0:
            lines += [_line("protocol", protocol), _line("metaData", metadata)]
        lines += [_line("add", a) for a in batch]
        (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
        if case.checkpoint_interval and version and version % case.checkpoint_interval == 0:
            if case.mapped_v2:
                _core_checkpoint(path, version)
            else:
                _checkpoint(log, version, add_array, case.adds_of(version).stop)
    marker.write_text("ok")
    return path


# --- Timing -------------------------------------------------------------------------


def _ours(path: Path) -> int:
    from airflow_delta_provider.delta.table import DeltaTable

    snap = DeltaTable(str(path)).snapshot()
    return len(snap.file_paths())


def _ours_add_files(path: Path) -> int:
    from airflow_delta_provider.delta.table import DeltaTable

    snap = DeltaTable(str(path)).snapshot()
    return len(snap.files)


def _delta_rs(path: Path) -> int:
    import deltalake

    return len(deltalake.DeltaTable(str(path)).file_uris())


def _time(fn: Callable[[Path], int], path: Path, reps: int) -> tuple[float, int]:
    fn(path)  # warm-up: imports, page cache
    times, n = [], 0
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        n = fn(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), n


def run(quick: bool, reps: int, only: set[str] | None, data_dir: Path, results_dir: Path) -> list[dict]:
    import deltalake

    results = []
    for case in cases(quick):
        if only and case.key not in only:
            continue
        t0 = time.perf_counter()
        path = build(case, data_dir)
        built = time.perf_counter() - t0
        ours, n_ours = _time(_ours, path, reps)
        ours_objects, _ = _time(_ours_add_files, path, reps)
        theirs, n_theirs = _time(_delta_rs, path, reps)
        expected = case.files
        if not n_ours == n_theirs == expected:
            raise SystemExit(
                f"case {case.key}: file counts differ: ours {n_ours}, delta-rs {n_theirs}, expected {expected}"
            )
        results.append(
            {
                "case": case.key,
                "title": case.title,
                "commits": case.commits,
                "files": expected,
                "ours_s": ours,
                "ours_add_files_s": ours_objects,
                "delta_rs_s": theirs,
                "ratio": ours / theirs,
                "target": case.target,
                "build_s": built,
            }
        )
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = {
        "benchmark": "snapshot_load",
        "quick": quick,
        "reps": reps,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "deltalake": deltalake.__version__,
        "pyarrow": pa.__version__,
        "results": results,
    }
    (results_dir / f"snapshot_load{'-quick' if quick else ''}-{stamp}.json").write_text(json.dumps(out, indent=2))
    return results


def markdown(results: list[dict]) -> str:
    lines = [
        "| case | log | files | ours (s) | delta-rs (s) | ours / delta-rs | target | ours with AddFile objects (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['case']} | {r['title']} | {r['files']:,} | {r['ours_s']:.3f} | {r['delta_rs_s']:.3f} "
            f"| {r['ratio']:.2f}x | <= {r['target']:.1f}x | {r['ours_add_files_s']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, for a smoke test")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per case (default 5, quick 3)")
    parser.add_argument("--case", action="append", choices=["a", "b", "c", "d"], help="run only these cases")
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    results = run(args.quick, reps, set(args.case) if args.case else None, args.data_dir, args.results_dir)
    print(f"## Snapshot load: median of {reps} runs{' (quick)' if args.quick else ''}\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
