"""Selective overwrites: ``replace_where`` against delta-rs and plain Spark, same run.

Issue 22, "Benchmarks": on a table of 10M rows ``(id long, day string, val
double)`` partitioned into 50 days, with one warm local SparkSession
(``local[2]``, 4g driver):

=============  ===============================  ================================  ===============================
case           ours                             delta-rs                          plain Spark (no Delta)
=============  ===============================  ================================  ===============================
one_day        ``run_append(mode="overwrite",   ``write_deltalake(mode=            the day written with
               replace_where="day = 'D'")``     "overwrite", predicate=...)``      ``partitionOverwriteMode=
                                                                                   dynamic`` into a parquet folder
data_column    ``replace_where`` on ``id``,     the same predicate                 -
               touching 5% of the files
=============  ===============================  ================================  ===============================

The source is the replaced rows again (``val`` changed), as a parquet folder.
Every timed run works on its own fresh copy of the table (``cp -r``, not
timed). Each run's result is checked (rows in the table, rows of the day).
**Target:** one_day <= 1.2x plain Spark; data_column reported.

Run ``.venv/bin/python benchmarks/bench_replace_where.py [--quick] [--repeat R]``;
``--quick`` is 1M rows in 10 days. Results go to ``benchmarks/results/`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def spark_session() -> Any:
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )


def build(spark: Any, root: Path, rows: int, days: int) -> tuple[Path, Path, Path, Path]:
    """The table (ours), its parquet twin (plain Spark), a one-day source and a 5%-of-ids source."""
    from pyspark.sql import functions as F

    from airflow_delta_provider.operations.append.spec import AppendSpec
    from airflow_delta_provider.operations.runners import run_spec

    key = root / f"{rows}x{days}"
    table, plain, day_src, ids_src = key / "table", key / "plain", key / "day_src", key / "ids_src"
    if table.exists():
        return table, plain, day_src, ids_src
    key.mkdir(parents=True, exist_ok=True)
    per_day = rows // days
    frame = spark.range(rows).select(
        F.col("id"),
        F.format_string("2026-01-%02d", (F.col("id") / per_day).cast("int") % days + 1).alias("day"),
        (F.col("id") * 0.5).alias("val"),
    )
    frame.write.partitionBy("day").parquet(str(key / "raw"))
    run_spec(
        spark,
        AppendSpec(table_path=str(table), source=str(key / "raw"), source_format="parquet", partition_by=("day",)),
    )
    shutil.copytree(key / "raw", plain)
    spark.read.parquet(str(key / "raw")).filter("day = '2026-01-02'").withColumn("val", F.col("val") + 1).write.parquet(
        str(day_src)
    )
    low, high = _five_percent_ids(rows)
    spark.read.parquet(str(key / "raw")).filter(f"id >= {low} AND id < {high}").withColumn(
        "val", F.col("val") + 1
    ).write.parquet(str(ids_src))
    return table, plain, day_src, ids_src


def _five_percent_ids(rows: int) -> tuple[int, int]:
    """An id range whose rows lie in 5% of the files (ids are laid out day by day)."""
    return rows // 2, rows // 2 + rows // 20


def timed(run: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M rows in 10 days")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data" / "replace_where")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    rows, days = (1_000_000, 10) if args.quick else (10_000_000, 50)

    import deltalake
    import pyarrow.dataset as ds

    from airflow_delta_provider.operations.append.spec import AppendSpec
    from airflow_delta_provider.operations.runners import run_spec

    spark = spark_session()
    table, plain, day_src, ids_src = build(spark, args.data_dir, rows, days)
    work = args.data_dir / "work"
    low, high = _five_percent_ids(rows)
    day_rows = ds.dataset(str(day_src)).count_rows()
    cases: dict[str, dict[str, Any]] = {
        "one_day": {
            "predicate": "day = '2026-01-02'",
            "source": day_src,
            "plain": True,
        },
        "data_column": {"predicate": f"id >= {low} AND id < {high}", "source": ids_src, "plain": False},
    }
    problems: list[str] = []
    results: dict[str, Any] = {"rows": rows, "days": days, "cases": {}}

    def fresh(src: Path, name: str) -> str:
        target = work / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(src, target)
        return str(target)

    for name, case in cases.items():
        times: dict[str, list[float]] = {"ours": [], "delta-rs": [], "plain Spark": []}
        source_table = ds.dataset(str(case["source"])).to_table()
        # Warm-up, untimed: every contender once.
        for rep in range(args.repeat + 1):
            path = fresh(table, "ours")
            took, result = timed(
                lambda path=path, case=case: run_spec(
                    spark,
                    AppendSpec(
                        table_path=path,
                        source=str(case["source"]),
                        source_format="parquet",
                        mode="overwrite",
                        replace_where=case["predicate"],
                    ),
                )
            )
            check = deltalake.DeltaTable(path).to_pyarrow_table(columns=["id"]).num_rows
            if check != rows or result.version != 1:
                problems.append(f"{name}/ours: {check} rows, version {result.version}")
            if rep:
                times["ours"].append(took)
            path = fresh(table, "rs")
            took, _ = timed(
                lambda path=path, case=case, source_table=source_table: deltalake.write_deltalake(
                    path, source_table, mode="overwrite", predicate=case["predicate"]
                )
            )
            if deltalake.DeltaTable(path).to_pyarrow_table(columns=["id"]).num_rows != rows:
                problems.append(f"{name}/delta-rs: wrong row count")
            if rep:
                times["delta-rs"].append(took)
            if case["plain"]:
                path = fresh(plain, "plain")
                took, _ = timed(
                    lambda path=path, case=case: (
                        spark.read.parquet(str(case["source"]))
                        .write.mode("overwrite")
                        .option("partitionOverwriteMode", "dynamic")
                        .partitionBy("day")
                        .parquet(path)
                    )
                )
                if ds.dataset(path, partitioning="hive").count_rows() != rows:
                    problems.append(f"{name}/plain Spark: wrong row count")
                if rep:
                    times["plain Spark"].append(took)
        medians = {k: statistics.median(v) for k, v in times.items() if v}
        results["cases"][name] = {"median_s": medians, "runs": times, "source_rows": source_table.num_rows}
    results["problems"] = problems

    print(f"## replace_where: {rows:,} rows in {days} days, median of {args.repeat} ({day_rows:,} rows a day)\n")
    print("| case | ours (s) | delta-rs (s) | plain Spark (s) | ours / delta-rs | ours / plain Spark | target |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, result in results["cases"].items():
        m = result["median_s"]
        plain_s = m.get("plain Spark")
        vs_plain = f"{m['ours'] / plain_s:.2f}x" if plain_s else "-"
        target = "<= 1.2x plain Spark: " + ("met" if plain_s and m["ours"] <= 1.2 * plain_s else "not met")
        print(
            f"| {name} | {m['ours']:.3f} | {m['delta-rs']:.3f} | {plain_s if plain_s is None else f'{plain_s:.3f}'} "
            f"| {m['ours'] / m['delta-rs']:.2f}x | {vs_plain} | {target if plain_s else 'reported'} |"
        )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"replace_where-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults: {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
