"""Spark data I/O: ``arrow`` (pyarrow on the executors) against ``hadoop`` (Spark's own parquet I/O).

Same warm ``local[2]`` session, same local table as bench_spark_ops (10M rows
``(id, content, val)`` in 50 files; ``--quick``: 1M in 10), each operation on
a fresh copy, the two modes interleaved:

* read: every row and column of every file, into Spark's ``noop`` sink;
* update touching all files: ``UPDATE SET val = val + 1 WHERE id % 2 = 0``;
* append of 1M rows (a tenth of the table) from parquet.

Target (issue 8): the update and the append within 1.2x of ``hadoop``.

    python benchmarks/bench_spark_io.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's pyarrow

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)

MODES = ("hadoop", "arrow")


def run(args: argparse.Namespace) -> dict:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.append.spec import AppendSpec
    from airflow_delta_provider.operations.runners import run_spec
    from airflow_delta_provider.operations.update.spec import UpdateSpec
    from airflow_delta_provider.spark.read.scan import scan

    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    files = 10 if args.quick else 50
    append_rows = 1_000_000 if not args.quick else 100_000
    spark = ops.start_spark("local[2]", "6g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    ds = ops.build_dataset(spark, args.data_dir, rows, files, append_rows, rebuild=False)
    work = args.data_dir / "work-io"

    def read(path: Path, io: str) -> None:
        scan(spark, DeltaTable(str(path)).snapshot(), io=io).write.format("noop").mode("overwrite").save()

    def update_all(path: Path, io: str) -> None:
        spec = UpdateSpec(table_path=str(path), condition="id % 2 = 0", updates=(("val", "val + 1"),), io=io)
        result = run_spec(spark, spec)
        assert result.metrics["numUpdatedRows"] == (rows + 1) // 2, result.metrics

    def append(path: Path, io: str) -> None:
        result = run_spec(
            spark, AppendSpec(table_path=str(path), source=str(ds.append_source), source_format="parquet", io=io)
        )
        assert result.metrics["numOutputRows"] == append_rows, result.metrics

    operations = {
        "read (full scan)": read,
        "update touching all files": update_all,
        f"append of {append_rows:,} rows": append,
    }
    out: dict = {"rows": rows, "files": files, "repeat": args.repeat, "results": {}}
    for name, fn in operations.items():
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for io in MODES:  # warm-up, untimed
            fn(ops.fresh_copy(ds.table, work, "t"), io)
        for _ in range(args.repeat):
            for io in MODES:
                path = ops.fresh_copy(ds.table, work, "t")
                start = time.perf_counter()
                fn(path, io)
                times[io].append(time.perf_counter() - start)
        h, a = statistics.median(times["hadoop"]), statistics.median(times["arrow"])
        out["results"][name] = {"hadoop_s": h, "arrow_s": a, "ratio": a / h}
        print(f"{name}: hadoop {h:.2f} s, arrow {a:.2f} s, {a / h:.2f}x", flush=True)
    ops.cleanup(work)
    spark.stop()
    return out


def markdown(r: dict) -> str:
    lines = [
        f"**arrow vs hadoop data I/O, local filesystem: {r['rows']:,} rows in {r['files']} files, "
        f"`local[2]`, median of {r['repeat']}**\n",
        "| operation | hadoop | arrow | arrow / hadoop |",
        "|---|---:|---:|---:|",
    ]
    for name, x in r["results"].items():
        lines.append(f"| {name} | {x['hadoop_s']:.2f} s | {x['arrow_s']:.2f} s | {x['ratio']:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows in 10 files")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per mode (default 5, quick 2)")
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (2 if args.quick else 5)
    result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "spark_io.json").write_text(json.dumps(result, indent=2))
    print()
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
