"""Deletion vectors: merge-on-read DELETE and UPDATE against copy-on-write, plain Spark and delta-rs.

Same warm ``local[2]`` session and table as bench_spark_ops (10M rows
``(id, content, val)`` in 50 files; ``--quick``: 1M in 10), each run on a
fresh copy, contenders interleaved:

* DELETE of 0.1% of the rows, scattered over every file (``id % 1000 = 7``):
  ours with deletion vectors, ours copy-on-write, plain Spark (read every
  file, keep the other rows, write a new folder), delta-rs (``delete``,
  which rewrites the files);
* UPDATE of the same rows (``val = val + 1``), the same four ways;
* a full scan (every row and column into Spark's ``noop`` sink) of a table
  whose files carry vectors hiding 1% of the rows, against the same scan of
  the table without vectors; and, as floors, the plain read of the same
  files with only ``_metadata.row_index`` added (what any row-index filter
  must pay before its membership test). The scan without vectors is also
  the floor of an UPDATE that takes the updated rows from Spark's reader:
  every column of every file holding a match is decoded.

Targets (issue 9): with vectors >= 3x faster than plain Spark and faster
than delta-rs; the scan with vectors within 1.2x of the scan without.

    python benchmarks/bench_deletion_vectors.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)

CONDITION = "id % 1000 = 7"
SCAN_CONDITION = "id % 100 = 3"  # 1% of the rows


def enable_deletion_vectors(path: Path) -> None:
    """Set ``delta.enableDeletionVectors`` (the commit upgrades the protocol)."""
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(str(path))
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", parameters={}, snapshot=snap)
    configuration = {**snap.metadata.configuration, "delta.enableDeletionVectors": "true"}
    txn.update_metadata(replace(snap.metadata, configuration=configuration))
    txn.commit(metrics={})


def run(args: argparse.Namespace) -> dict:
    import deltalake
    from pyspark.sql import functions as F

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.delete.spec import DeleteSpec
    from airflow_delta_provider.operations.runners import run_spec
    from airflow_delta_provider.operations.update.spec import UpdateSpec
    from airflow_delta_provider.spark.read.scan import scan

    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    files = 10 if args.quick else 50
    spark = ops.start_spark("local[2]", "6g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    ds = ops.build_dataset(spark, args.data_dir, rows, files, 1_000_000 if not args.quick else 100_000, rebuild=False)
    work = args.data_dir / "work-dv"
    base_dv = work / "base-dv"
    if base_dv.exists():
        shutil.rmtree(base_dv)
    shutil.copytree(ds.table, base_dv)
    enable_deletion_vectors(base_dv)
    hidden = work / "base-hidden"  # vectors hiding 1% of the rows
    if hidden.exists():
        shutil.rmtree(hidden)
    shutil.copytree(base_dv, hidden)
    run_spec(spark, DeleteSpec(table_path=str(hidden), condition=SCAN_CONDITION))
    schema = spark.read.parquet(str(ds.table)).schema
    deleted_expected = len(range(7, rows, 1000))

    def ours_spec(op: str, path: Path) -> DeleteSpec | UpdateSpec:
        if op == "delete":
            return DeleteSpec(table_path=str(path), condition=CONDITION)
        return UpdateSpec(table_path=str(path), condition=CONDITION, updates=(("val", "val + 1"),))

    def ours_dv(op: str, path: Path) -> None:
        result = run_spec(spark, ours_spec(op, path))
        changed = result.metrics["numDeletedRows" if op == "delete" else "numUpdatedRows"]
        assert changed == deleted_expected and result.metrics["numCopiedRows"] == 0, result.metrics

    def ours_cow(op: str, path: Path) -> None:
        result = run_spec(spark, ours_spec(op, path))
        assert result.metrics["numCopiedRows"] > 0, result.metrics

    def plain_spark(op: str, path: Path) -> None:
        cond = F.coalesce(F.expr(CONDITION), F.lit(False))
        df = spark.read.schema(schema).parquet(str(path))
        if op == "delete":
            df = df.filter(~cond)
        else:
            df = df.select("id", "content", F.when(cond, F.col("val") + 1).otherwise(F.col("val")).alias("val"))
        df.write.mode("overwrite").parquet(str(path.with_name(path.name + "-out")))

    def delta_rs(op: str, path: Path) -> None:
        table = deltalake.DeltaTable(str(path))
        if op == "delete":
            table.delete(CONDITION)
        else:
            table.update(updates={"val": "val + 1"}, predicate=CONDITION)

    contenders = {
        "ours (deletion vectors)": (ours_dv, base_dv),
        "ours (copy-on-write)": (ours_cow, ds.table),
        "plain Spark": (plain_spark, ds.table),
        "delta-rs": (delta_rs, ds.table),
    }
    out: dict = {"rows": rows, "files": files, "repeat": args.repeat, "results": {}}
    for op in ("delete", "update"):
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for fn, base in contenders.values():  # warm-up, untimed
            fn(op, ops.fresh_copy(base, work, "t"))
        for _ in range(args.repeat):
            for name, (fn, base) in contenders.items():
                path = ops.fresh_copy(base, work, "t")
                shutil.rmtree(path.with_name(path.name + "-out"), ignore_errors=True)
                start = time.perf_counter()
                fn(op, path)
                times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(t) for name, t in times.items()}
        out["results"][op] = medians
        print(op, {k: round(v, 3) for k, v in medians.items()}, flush=True)

    def full_scan(path: Path) -> None:
        scan(spark, DeltaTable(str(path)).snapshot()).write.format("noop").mode("overwrite").save()

    def with_row_index(path: Path) -> None:
        """The floor of a row-index filter: the plain read plus the row index."""
        df = spark.read.schema(schema).parquet(str(path))
        df.withColumn("_row_index", df.metadataColumn("_metadata").getField("row_index")).write.format("noop").mode(
            "overwrite"
        ).save()

    scans = {
        "without vectors": lambda: full_scan(base_dv),
        "with vectors (1% hidden)": lambda: full_scan(hidden),
        "plain read + row index (floor)": lambda: with_row_index(base_dv),
    }
    scan_times: dict[str, list[float]] = {name: [] for name in scans}
    for fn in scans.values():
        fn()
    for _ in range(args.repeat):
        for name, fn in scans.items():
            start = time.perf_counter()
            fn()
            scan_times[name].append(time.perf_counter() - start)
    out["results"]["scan"] = {k: statistics.median(v) for k, v in scan_times.items()}
    print("scan", out["results"]["scan"], flush=True)
    ops.cleanup(work)
    spark.stop()
    return out


def markdown(r: dict) -> str:
    lines = [
        f"**Deletion vectors: {r['rows']:,} rows in {r['files']} files, `local[2]`, median of {r['repeat']}**\n",
        "| operation | ours, vectors | ours, copy-on-write | plain Spark | delta-rs | plain / vectors | delta-rs / vectors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for op in ("delete", "update"):
        x = r["results"][op]
        dv = x["ours (deletion vectors)"]
        lines.append(
            f"| {op} of 0.1% of rows, all files | {dv:.2f} s | {x['ours (copy-on-write)']:.2f} s | "
            f"{x['plain Spark']:.2f} s | {x['delta-rs']:.2f} s | {x['plain Spark'] / dv:.1f}x | {x['delta-rs'] / dv:.1f}x |"
        )
    s = r["results"]["scan"]
    plain, hidden = s["without vectors"], s["with vectors (1% hidden)"]
    floor = s["plain read + row index (floor)"]
    lines += [
        "",
        "| full scan | without vectors | with vectors hiding 1% | ratio | floor: read + row index | floor ratio |",
        "|---|---:|---:|---:|---:|---:|",
        f"| every row and column | {plain:.2f} s | {hidden:.2f} s | {hidden / plain:.2f}x | {floor:.2f} s "
        f"| {floor / plain:.2f}x |",
        "",
        f"Ceiling of plain / vectors for an UPDATE that decodes every column of the files it touches: "
        f"plain Spark's update / the scan without vectors = {r['results']['update']['plain Spark'] / plain:.1f}x.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows in 10 files")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per contender (default 3, quick 1)")
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 3)
    result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "deletion_vectors.json").write_text(json.dumps(result, indent=2))
    print()
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
