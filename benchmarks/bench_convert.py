"""CONVERT TO DELTA with no Spark against delta-rs's ``convert_to_deltalake`` (issue 26).

A Parquet folder of 10,000 files in 100 Hive partitions (``day=...``; 100
rows of ``(id long, name string, amount double, at timestamp)`` each, one row
group), written once with pyarrow and kept in ``benchmarks/.data``
(``--quick``: 1,000 files in 10 partitions). Each timed run converts a fresh
copy of the folder (the copy is not timed), the contenders interleaved:

* ours: ``convert_to_delta(DeltaTable(copy), "day date")``, engine="python";
* delta-rs: ``convert_to_deltalake(copy, partition_by=day date, partition_strategy="hive")``.

Both must commit version 0 with every file. Each figure is the median of
``--repeat`` runs (default 3). Target: ours <= 1.5x delta-rs.

    python benchmarks/bench_convert.py [--quick] [--repeat N] [--files N --partitions N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

ROWS_PER_FILE = 100
TARGET = 1.5


def build_folder(root: Path, files: int, partitions: int) -> Path:
    """The Parquet folder, built once per size and reused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / f"convert-{files}-{partitions}"
    marker = folder / "_SUCCESS"
    if marker.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(files):
        day = dt.date(2026, 1, 1) + dt.timedelta(days=i % partitions)
        first = i * ROWS_PER_FILE
        data = pa.table(
            {
                "id": pa.array(range(first, first + ROWS_PER_FILE), pa.int64()),
                "name": [f"customer {n % 997}" for n in range(first, first + ROWS_PER_FILE)],
                "amount": pa.array([n * 0.5 for n in range(ROWS_PER_FILE)], pa.float64()),
                "at": pa.array(
                    [start + dt.timedelta(seconds=n) for n in range(first, first + ROWS_PER_FILE)],
                    pa.timestamp("us", tz="UTC"),
                ),
            }
        )
        target = folder / f"day={day.isoformat()}"
        target.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, target / f"part-{i:05d}.snappy.parquet")
    marker.touch()
    return folder


def ours(path: Path, files: int) -> None:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.convert.plan import convert_to_delta

    result, plan = convert_to_delta(DeltaTable(path), "day date")
    assert result.version == 0 and len(plan.adds) == files, (result.version, len(plan.adds))


def delta_rs(path: Path, files: int) -> None:
    from deltalake import DeltaTable as RsTable
    from deltalake import Field, Schema, convert_to_deltalake
    from deltalake.schema import PrimitiveType

    convert_to_deltalake(
        str(path), partition_by=Schema([Field("day", PrimitiveType("date"))]), partition_strategy="hive"
    )
    table = RsTable(str(path))
    assert table.version() == 0 and len(table.file_uris()) == files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int)
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    files = args.files or (1_000 if args.quick else 10_000)
    partitions = args.partitions or (10 if args.quick else 100)
    folder = build_folder(args.data_dir, files, partitions)
    work = args.data_dir / "work-convert"
    contenders = {"ours (engine=python)": ours, "delta-rs convert_to_deltalake": delta_rs}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeat):
        for name, run in contenders.items():
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(folder, work)
            started = time.perf_counter()
            run(work, files)
            times[name].append(time.perf_counter() - started)
    shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["ours (engine=python)"] / median["delta-rs convert_to_deltalake"]
    print(f"CONVERT TO DELTA of {files:,} files in {partitions} partitions, median of {args.repeat}\n")
    print("| contender | seconds |\n|---|---:|")
    for name, seconds in median.items():
        print(f"| {name} | {seconds:.3f} |")
    verdict = "met" if ratio <= TARGET else "missed"
    print(f"\nours / delta-rs: {ratio:.2f}x (target <= {TARGET}x: {verdict})")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    result = {"files": files, "partitions": partitions, "seconds": median, "ours / delta-rs": ratio}
    (args.results_dir / "convert.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
