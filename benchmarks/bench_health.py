"""The autopilot's decision pass on a 100,000-file table, against delta-rs's aggregation of the same files.

The table (issue 25 item 6, "Benchmark") is partitioned by ``day`` into 100
partitions of 1,000 files each, one in ten of them with a deletion vector. It
is written once through the core (version 0 creates it, versions 1..10 add
10,000 files each, a checkpoint at 10, then an OPTIMIZE and a VACUUM END
commit) and cached. No data file is written: the pass reads only the log.

Timed, each from a fresh ``DeltaTable`` (median of ``--reps``, default 3):

- **ours**: :func:`~airflow_delta_provider.delta.health.decisions.assess` with
  ``engine="python"``'s path: load the snapshot, build the health report
  (files, bytes, small files, rows and hidden rows per partition; tombstones;
  the newest 200 commits' commitInfo; LITE availability) and decide;
- **delta-rs**: ``deltalake.DeltaTable(p).get_add_actions(flatten=True)`` and a
  pyarrow ``group_by`` over the partition column for files, bytes, small files
  and rows: the same per-partition aggregation, without history and decisions.

Run ``python benchmarks/bench_health.py [--quick] [--files N] [--reps N]``; the table is
cached in ``benchmarks/.data/``, results go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_snapshot_load import _time  # noqa: E402  (median of warm runs)

from airflow_delta_provider.delta.actions.model import AddFile, DeletionVector, Metadata  # noqa: E402
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint  # noqa: E402
from airflow_delta_provider.delta.health.decisions import assess  # noqa: E402
from airflow_delta_provider.delta.table import DeltaTable  # noqa: E402

TARGET_S = 2.0
PARTITIONS = 100
BATCHES = 10
ROWS = 1000
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "day", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def _add(i: int) -> AddFile:
    day = f"2024-{1 + i % PARTITIONS // 28:02d}-{1 + i % PARTITIONS % 28:02d}"
    dv = DeletionVector("u", f"ab^-aqEH.-t@S}}K{{vb[*k^{i % 10}", 40, 1 + i % 50, offset=1) if i % 10 == 0 else None
    return AddFile(
        path=f"day={day}/part-{i:06d}-c000.snappy.parquet",
        partition_values={"day": day},
        size=200_000 + (i * 7919) % 90_000_000,
        modification_time=1_700_000_000_000 + i,
        stats=json.dumps({"numRecords": ROWS, "minValues": {"id": i * ROWS}, "maxValues": {"id": i * ROWS + ROWS - 1}}),
        deletion_vector=dv,
    )


def build(root: Path, files: int) -> Path:
    path = root / f"health-{files}"
    if (path / ".complete").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    table = DeltaTable(str(path))
    config = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "1000"}
    txn = table.transaction("CREATE TABLE", snapshot=None)
    txn.update_metadata(Metadata.new(SCHEMA, ["day"], config, created_time=1_700_000_000_000))
    txn.commit()
    per = files // BATCHES
    for b in range(BATCHES):
        txn = table.transaction("WRITE", snapshot=table.snapshot())
        txn.add_all([_add(i) for i in range(b * per, (b + 1) * per)])
        txn.commit()
    write_checkpoint(table, table.snapshot())
    for op in ("OPTIMIZE", "VACUUM END"):
        txn = table.transaction(op, snapshot=table.snapshot())
        txn.add(dataclasses.replace(_add(files + 1), path=f"extra-{op[0]}.parquet", deletion_vector=None))
        txn.commit()
    (path / ".complete").write_text("ok")
    return path


def ours(path: Path) -> int:
    report, _decisions = assess(DeltaTable(str(path)))
    return report.num_files


def delta_rs(path: Path) -> int:
    import deltalake

    adds = pa.table(deltalake.DeltaTable(str(path)).get_add_actions(flatten=True))
    adds = adds.append_column("small", pc.cast(pc.less(adds["size_bytes"], 64 * 1024 * 1024), pa.int64()))
    grouped = adds.group_by("partition.day").aggregate(
        [("size_bytes", "sum"), ("size_bytes", "count"), ("small", "sum"), ("num_records", "sum")]
    )
    return sum(grouped["size_bytes_count"].to_pylist())


def main(argv: list[str] | None = None) -> int:
    import deltalake

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=None, help="files in the table (default 100,000; quick 10,000)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the files, for a smoke test")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    args.files = args.files or (10_000 if args.quick else 100_000)
    t0 = time.perf_counter()
    path = build(args.data_dir, args.files)
    built = time.perf_counter() - t0
    ours_s, n_ours = _time(ours, path, args.reps)
    theirs_s, n_theirs = _time(delta_rs, path, args.reps)
    expected = args.files + 2
    if not n_ours == n_theirs == expected:
        raise SystemExit(f"file counts differ: ours {n_ours}, delta-rs {n_theirs}, expected {expected}")
    result = {
        "benchmark": "health",
        "files": expected,
        "reps": args.reps,
        "ours_s": ours_s,
        "delta_rs_s": theirs_s,
        "target_s": TARGET_S,
        "build_s": built,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "deltalake": deltalake.__version__,
        "pyarrow": pa.__version__,
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"health-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(result, indent=2))
    print(f"## Health decision pass: median of {args.reps} runs\n")
    print("| files | ours: report + decide (s) | delta-rs: add actions + group_by (s) | target |")
    print("|---:|---:|---:|---:|")
    print(f"| {expected:,} | {ours_s:.3f} | {theirs_s:.3f} | <= {TARGET_S:.1f} s |")
    return 0 if ours_s <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
