"""UPDATE of 1% of the rows with and without the change data feed (issue 11).

The table of bench_spark_ops: ``(id, content, val)``, 10M rows in 1,000 files
of contiguous id ranges (``--quick``: 1M rows, 200 files), and a copy of it
with ``delta.enableChangeDataFeed`` set. 1% of the rows are updated, two ways:

* **narrow**: the first 1% of the ids (1% of the files are rewritten);
* **scattered**: every hundredth id (every file is rewritten).

Contenders, each on a fresh copy, interleaved, one warm ``local[2]`` session:

* ours: ``run_spec(UpdateSpec(...))`` on the table without the feed;
* ours, CDF: the same on the table with it, which also writes the
  pre- and post-images as ``cdc`` files (a second read of the touched files);
* delta-rs, CDF: ``DeltaTable.update`` on the table with the feed;
* plain Spark: the table's files read whole, ``when(cond, new)``, every row
  written again as parquet (no log, no change data).

Target (issue 11): ours with CDF <= 1.3x ours without. Every run's counts
are checked, and the CDF runs' change rows too.

    python benchmarks/bench_change_data.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)

SET = {"val": "val + 1"}


def with_change_data_feed(base: Path, home: Path) -> Path:
    """A copy of ``base`` with the change data feed on (a metadata-only commit)."""
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.alter.plan import SetProperties, alter_table

    target = home / "table-cdf"
    if not (target / "_delta_log").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(base, target)
        alter_table(DeltaTable(str(target)), SetProperties({"delta.enableChangeDataFeed": "true"}))
    return target


def update_case(spark, args, ds, cdf_table: Path, rows: int, scattered: bool) -> list[dict]:
    from deltalake import DeltaTable as RsTable

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.runners import run_spec
    from airflow_delta_provider.operations.update.spec import UpdateSpec
    from airflow_delta_provider.spark.read.table_changes import read_changes

    condition = "id % 100 = 0" if scattered else f"id < {rows // 100}"
    updated = rows // 100
    touched: dict[str, int] = {}

    def ours(path: Path) -> None:
        m = run_spec(spark, UpdateSpec(table_path=str(path), condition=condition, updates=tuple(SET.items()))).metrics
        assert m["numUpdatedRows"] == updated and m["numAddedChangeFiles"] == 0, m
        touched["files"] = m["numRemovedFiles"]

    def ours_cdf(path: Path) -> None:
        result = run_spec(spark, UpdateSpec(table_path=str(path), condition=condition, updates=tuple(SET.items())))
        assert result.metrics["numUpdatedRows"] == updated and result.metrics["numAddedChangeFiles"] > 0
        touched["cdc"] = result.version  # checked once, outside the timing

    def delta_rs(path: Path) -> None:
        m = RsTable(str(path)).update(updates=SET, predicate=condition)
        assert m["num_updated_rows"] == updated, m

    def plain(path: Path) -> None:
        from pyspark.sql import functions as F

        paths = [str(path / f.path) for f in DeltaTable(str(path)).snapshot().files]
        frame = spark.read.parquet(*paths)
        out = frame.withColumn("val", F.when(F.expr(condition), F.expr(SET["val"])).otherwise(F.col("val")))
        out.write.mode("overwrite").parquet(str(path) + "-plain")

    contenders = [
        ("ours", ds.table, ours),
        ("ours, CDF", cdf_table, ours_cdf),
        ("delta-rs, CDF", cdf_table, delta_rs),
        ("plain Spark", ds.table, plain),
    ]
    work = args.data_dir / "work-cdf"
    times: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    for _ in range(args.repeat):
        for name, base, run in contenders:
            copy = ops.fresh_copy(base, work, name.replace(" ", "_").replace(",", ""))
            started = time.perf_counter()
            run(copy)
            times[name].append(time.perf_counter() - started)
            if name == "ours, CDF":  # the change rows are right
                counts = read_changes(spark, str(copy), touched["cdc"]).frame.groupBy("_change_type").count()
                assert dict(map(tuple, counts.collect())) == {"update_preimage": updated, "update_postimage": updated}
            shutil.rmtree(str(copy) + "-plain", ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(t) for name, t in times.items()}
    case = "scattered" if scattered else "narrow"
    label = f"{case}: {updated:,} of {rows:,} rows ({touched['files']} of {ds.files} files rewritten)"
    out = ops.ratio_rows(label, median)
    for r in out:
        r["CDF / no CDF"] = round(median["ours, CDF"] / median["ours"], 2) if r["contender"] == "ours, CDF" else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    parser.add_argument("--case", choices=["narrow", "scattered", "both"], default="both")
    args = parser.parse_args(argv)
    rows, files = (1_000_000, 200) if args.quick else (10_000_000, 1_000)
    spark = ops.start_spark("local[2]", "6g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    ds = ops.build_dataset(spark, args.data_dir, rows, files, 1, rebuild=False)
    cdf_table = with_change_data_feed(ds.table, ds.table.parent)
    results = []
    for scattered in {"narrow": [False], "scattered": [True], "both": [False, True]}[args.case]:
        results += update_case(spark, args, ds, cdf_table, rows, scattered)
    print("| case | contender | seconds | ours / this | CDF / no CDF |\n|---|---|---:|---:|---:|")
    for r in results:
        ratio = "" if r["CDF / no CDF"] is None else f"{r['CDF / no CDF']:.2f}x"
        print(f"| {r['case']} | {r['contender']} | {r['seconds']:.3f} | {r['ours / this']:.2f}x | {ratio} |")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "change_data.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
