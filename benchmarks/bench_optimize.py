"""OPTIMIZE: compaction against plain Spark and delta-rs, and Z-order's file skipping (issue 12).

Compaction: the table of bench_spark_ops (``(id, content, val)``) built as
1,000 small files of 10M rows (``--quick``: 200 files, 1M rows), each run on a
fresh copy, contenders interleaved, one warm ``local[2]`` session:

* ours: ``run_optimize`` (bins of up to 128 MiB, one file each);
* plain Spark: the same files read, ``repartition`` into as many files as ours
  wrote, written as parquet (no log);
* delta-rs: ``DeltaTable.optimize.compact()`` with the same target size.

Target: ours <= 1.2x plain Spark; delta-rs reported.

Z-order: random ``x, y`` (longs) in 100 files; the share of files whose
``y`` bounds hold a constant (files a ``y = c`` filter cannot skip), before,
after our ``zorder_by=[x, y]`` and after delta-rs's ``optimize.z_order``,
both aiming at 100 files. Target (issue 12): at most 30%.

    python benchmarks/bench_optimize.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)

TARGET = 128 * 1024 * 1024


def compaction(spark, args, rows: int, files: int) -> list[dict]:
    from deltalake import DeltaTable as RsTable

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
    from airflow_delta_provider.operations.runners import run_spec

    ds = ops.build_dataset(spark, args.data_dir, rows, files, 1, rebuild=False)
    work = args.data_dir / "work-optimize"
    out_files = max(1, round(ds.table_bytes / TARGET))

    def ours(path: Path) -> None:
        result = run_spec(spark, OptimizeSpec(table_path=str(path), target_size=TARGET))
        assert result.metrics["numRemovedFiles"] == ds.files, result.metrics

    def plain(path: Path) -> None:
        paths = [str(path / f.path) for f in DeltaTable(str(path)).snapshot().files]
        spark.read.parquet(*paths).repartition(out_files).write.mode("overwrite").parquet(str(path) + "-plain")

    def delta_rs(path: Path) -> None:
        metrics = RsTable(str(path)).optimize.compact(target_size=TARGET)
        assert metrics["numFilesRemoved"] == ds.files, metrics

    contenders = {"ours": ours, "plain Spark": plain, "delta-rs": delta_rs}
    median = ops.time_contenders(contenders, ds.table, work, args.repeat)
    return ops.ratio_rows(f"compaction of {ds.files:,} files ({rows:,} rows)", median)


def zorder_skipping(spark, args) -> list[dict]:
    import pyarrow as pa
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
    from airflow_delta_provider.operations.runners import run_spec

    root = args.data_dir / "zorder"
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(11)
    rows = 2_000 if args.quick else 20_000
    base = root / "base"
    for i in range(100):
        data = {
            "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
            "x": pa.array([rng.randrange(10**9) for _ in range(rows)], pa.int64()),
            "y": pa.array([rng.randrange(10**9) for _ in range(rows)], pa.int64()),
        }
        write_deltalake(str(base), pa.table(data), mode="append")
    size = DeltaTable(str(base)).snapshot().size_in_bytes
    value = 500_000_000

    def share(path: Path) -> tuple[float, int]:
        files = DeltaTable(str(path)).snapshot().files
        hits = sum(
            1 for f in files if f.parsed_stats()["minValues"]["y"] <= value <= f.parsed_stats()["maxValues"]["y"]
        )
        return hits / len(files), len(files)

    before, count = share(base)
    results = [{"case": "before", "files": count, "share of files a y = c filter reads": round(before, 3)}]
    contenders = {
        "ours, zorder_by=[x, y]": lambda path: run_spec(
            spark, OptimizeSpec(table_path=str(path), zorder_by=("x", "y"), target_size=size // 100)
        ),
        "delta-rs, optimize.z_order([x, y])": lambda path: RsTable(str(path)).optimize.z_order(
            ["x", "y"], target_size=size // 100
        ),
    }
    for case, run in contenders.items():
        copy = root / case.split(",")[0]
        shutil.copytree(base, copy)
        started = time.perf_counter()
        run(copy)
        took = time.perf_counter() - started
        fraction, count = share(copy)
        results.append(
            {
                "case": case,
                "files": count,
                "share of files a y = c filter reads": round(fraction, 3),
                "seconds": round(took, 3),
            }
        )
    shutil.rmtree(root, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    rows, files = (1_000_000, 200) if args.quick else (10_000_000, 1_000)
    spark = ops.start_spark("local[2]", "6g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    compact = compaction(spark, args, rows, files)
    zorder = zorder_skipping(spark, args)
    print("| case | contender | seconds | ours / this |\n|---|---|---:|---:|")
    for r in compact:
        print(f"| {r['case']} | {r['contender']} | {r['seconds']:.3f} | {r['ours / this']:.2f}x |")
    print("\n| Z-order | files | share of files a `y = c` filter reads | seconds |\n|---|---:|---:|---:|")
    for r in zorder:
        print(
            f"| {r['case']} | {r['files']} | {r['share of files a y = c filter reads']:.3f} | {r.get('seconds', '')} |"
        )
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "optimize.json").write_text(json.dumps({"compaction": compact, "zorder": zorder}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
