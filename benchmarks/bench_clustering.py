"""Liquid clustering: incremental OPTIMIZE after appending 5% new data, against a full re-cluster (issue 25).

A table of random ``x, y`` (longs) and ``id`` in 100 files (``--rows`` per
file: 20,000, ``--quick`` 2,000), written by delta-rs, made clustered by
``ALTER ... CLUSTER BY (x, y)`` and clustered once by our OPTIMIZE into about
100 files (not timed). Then an APPEND of ours adds 5% more rows (random
``x, y``). On fresh copies of that table, contenders interleaved, one warm
``local[2]`` session:

* incremental, first ZCube complete: ``run_optimize`` with delta-spark's
  ``minCubeSize.threshold`` set below the first OPTIMIZE's ZCube, as a ZCube of
  100 GiB or more is on a production table: only the files not yet clustered;
* incremental at delta-spark's defaults: the first ZCube (far below 100 GiB) is
  partial, so it is merged again with the new files, as delta-spark OSS does;
* full: ``run_optimize(full=True)`` (``OPTIMIZE FULL``: every file).

Reported: median seconds, files rewritten, and the share of files a
``y = c`` point filter reads (by min/max stats) afterwards. No target; the
issue asks for the comparison.

    python benchmarks/bench_clustering.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import bench_spark_ops as ops  # noqa: E402  (fresh copies, session)

FILES = 100
NEW_SHARE = 0.05
POINT = 500_000_000


def _rows(rng: random.Random, start: int, n: int):
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "x": pa.array([rng.randrange(10**9) for _ in range(n)], pa.int64()),
            "y": pa.array([rng.randrange(10**9) for _ in range(n)], pa.int64()),
        }
    )


def build(spark, root: Path, rows: int) -> tuple[Path, int]:
    """The clustered table with 5% unclustered rows appended; the target file size."""
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json
    from airflow_delta_provider.operations.append.spec import AppendSpec
    from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
    from airflow_delta_provider.operations.runners import run_spec

    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(11)
    base = root / "base"
    for i in range(FILES):
        write_deltalake(str(base), _rows(rng, i * rows, rows), mode="append")
    alter_table(DeltaTable(str(base)), change_from_json({"cluster_by": ["x", "y"]}))
    size = DeltaTable(str(base)).snapshot().size_in_bytes // FILES
    run_spec(spark, OptimizeSpec(table_path=str(base), target_size=size))
    source = root / "new"
    source.mkdir()
    pq.write_table(_rows(rng, FILES * rows, int(FILES * rows * NEW_SHARE)), source / "part-0.parquet")
    run_spec(spark, AppendSpec(table_path=str(base), source=str(source), source_format="parquet"))
    return base, size


def point_filter_share(path: Path) -> float:
    from airflow_delta_provider.delta.table import DeltaTable

    files = DeltaTable(str(path)).snapshot().files
    hits = [f for f in files if f.parsed_stats()["minValues"]["y"] <= POINT <= f.parsed_stats()["maxValues"]["y"]]
    return len(hits) / len(files)


def main(argv: list[str] | None = None) -> int:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.optimize.spark import MIN_CUBE_SIZE_CONF
    from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
    from airflow_delta_provider.operations.runners import run_spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int, default=None, help="rows per file (default 20,000; --quick 2,000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    rows = args.rows or (2_000 if args.quick else 20_000)
    spark = ops.start_spark("local[2]", "4g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    root = args.data_dir / "clustering"
    base, size = build(spark, root, rows)
    before = DeltaTable(str(base)).snapshot()
    complete_cube = str(before.size_in_bytes // 2)  # the first ZCube holds ~95% of the bytes

    def incremental(path: Path, min_cube_size: str | None):
        if min_cube_size is None:
            spark.conf.unset(MIN_CUBE_SIZE_CONF)
        else:
            spark.conf.set(MIN_CUBE_SIZE_CONF, min_cube_size)
        try:
            return run_spec(spark, OptimizeSpec(table_path=str(path), target_size=size))
        finally:
            spark.conf.unset(MIN_CUBE_SIZE_CONF)

    contenders = {
        "incremental, first ZCube complete": lambda path: incremental(path, complete_cube),
        "incremental, delta-spark defaults": lambda path: incremental(path, None),
        "full (OPTIMIZE FULL)": lambda path: run_spec(
            spark, OptimizeSpec(table_path=str(path), target_size=size, full=True)
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    outcome: dict[str, dict] = {}
    for _ in range(args.repeat):
        for name, run in contenders.items():
            copy = ops.fresh_copy(base, root / "work", name.split(" ")[0].strip(","))
            started = time.perf_counter()
            result = run(copy)
            times[name].append(time.perf_counter() - started)
            outcome[name] = {
                "files rewritten": result.metrics["numRemovedFiles"],
                "files written": result.metrics["numAddedFiles"],
                "point filter share": round(point_filter_share(copy), 3),
            }
    results = [{"case": name, "seconds": round(statistics.median(t), 3), **outcome[name]} for name, t in times.items()]
    print(f"table: {before.num_files} files, {before.num_records:,} rows ({NEW_SHARE:.0%} appended, unclustered)")
    print("\n| OPTIMIZE | seconds | files rewritten | files written | share of files a `y = c` filter reads |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['case']} | {r['seconds']:.3f} | {r['files rewritten']} | {r['files written']} "
            f"| {r['point filter share']:.3f} |"
        )
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "clustering.json").write_text(
        json.dumps({"rows_per_file": rows, "files": before.num_files, "results": results}, indent=2)
    )
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
