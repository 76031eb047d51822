"""MERGE (upsert) against plain Spark and delta-rs (issue 12).

The table of bench_spark_ops: ``(id, content, val)``, 10M rows in 1,000 files
of contiguous id ranges (``--quick``: 1M rows, 200 files). The source is
100,000 rows (``--quick``: 10,000): half of them updates of existing ids,
half of them inserts of new ids above the table's. Two cases:

* **narrow**: the updated ids lie in one narrow range (a few files);
* **scattered**: the updated ids are drawn at random from the whole table
  (nearly every file holds some).

Contenders, each on a fresh copy, interleaved, one warm ``local[2]`` session:

* ours: MERGE (``MergeSpec`` run by ``run_spec``) with ``[matched: update *, not_matched: insert *]``;
* plain Spark: the table's files read whole, a full outer join with the
  source on ``id``, every row written again as parquet (no log);
* delta-rs: ``DeltaTable.merge(...).when_matched_update_all()
  .when_not_matched_insert_all()``, the source as an Arrow table.

Targets (issue 12): narrow >= 3x faster than plain Spark; scattered <= 1.3x
plain Spark; delta-rs reported. Every run's counts are checked.

    python benchmarks/bench_merge.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)

UPSERT = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]


def write_source(folder: Path, rows: int, source_rows: int, scattered: bool, seed: int = 5) -> Path:
    """Half updates (narrow or scattered ids), half inserts (ids from ``rows`` up), as 4 parquet files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    half = source_rows // 2
    if scattered:
        updates = np.sort(rng.choice(rows, size=half, replace=False))
    else:
        start = rows // 2
        updates = np.arange(start, start + half)
    ids = np.concatenate([updates, np.arange(rows, rows + source_rows - half)]).astype(np.int64)
    table = pa.table(
        {
            "id": ids,
            "content": pa.array([f"merged-{i}" for i in ids], pa.string()),
            "val": rng.random(len(ids)) * 1000.0,
        }
    )
    for i, chunk in enumerate(np.array_split(np.arange(len(ids)), 4)):
        pq.write_table(table.take(chunk), folder / f"part-{i}.parquet")
    return folder


def merge_case(spark, args, ds, rows: int, source_rows: int, scattered: bool) -> list[dict]:
    import pyarrow.parquet as pq
    from deltalake import DeltaTable as RsTable

    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.merge.spec import MergeSpec
    from airflow_delta_provider.operations.runners import run_spec

    case = "scattered" if scattered else "narrow"
    source = write_source(args.data_dir / f"merge-source-{case}", rows, source_rows, scattered)
    arrow_source = pq.read_table(str(source))
    half = source_rows // 2
    work = args.data_dir / "work-merge"
    touched: dict[str, int] = {}

    def ours(path: Path) -> None:
        spec = MergeSpec(table_path=str(path), source=str(source), on="t.id = s.id", clauses=json.dumps(UPSERT))
        m = run_spec(spark, spec).metrics
        assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == (half, source_rows - half), m
        touched["files"] = m["numTargetFilesRemoved"]

    def plain(path: Path) -> None:
        from pyspark.sql import functions as F

        paths = [str(path / f.path) for f in DeltaTable(str(path)).snapshot().files]
        t, s = spark.read.parquet(*paths).alias("t"), spark.read.parquet(str(source)).alias("s")
        joined = t.join(s, F.col("t.id") == F.col("s.id"), "full_outer")
        out = joined.select(*[F.coalesce(F.col(f"s.{c}"), F.col(f"t.{c}")).alias(c) for c in ("id", "content", "val")])
        out.write.mode("overwrite").parquet(str(path) + "-plain")

    def delta_rs(path: Path) -> None:
        m = (
            RsTable(str(path))
            .merge(arrow_source, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (half, source_rows - half), m

    contenders = {"ours": ours, "plain Spark": plain, "delta-rs": delta_rs}
    median = ops.time_contenders(contenders, ds.table, work, args.repeat)
    return ops.ratio_rows(
        f"{case}: {source_rows:,} source rows into {rows:,} ({touched['files']} of {ds.files} files rewritten)", median
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    parser.add_argument("--case", choices=["narrow", "scattered", "both"], default="both")
    args = parser.parse_args(argv)
    rows, files, source_rows = (1_000_000, 200, 10_000) if args.quick else (10_000_000, 1_000, 100_000)
    spark = ops.start_spark("local[2]", "6g", ["spark.sql.shuffle.partitions=2", "spark.default.parallelism=2"])
    ds = ops.build_dataset(spark, args.data_dir, rows, files, 1, rebuild=False)
    results = []
    for scattered in {"narrow": [False], "scattered": [True], "both": [False, True]}[args.case]:
        results += merge_case(spark, args, ds, rows, source_rows, scattered)
    print("| case | contender | seconds | ours / this |\n|---|---|---:|---:|")
    for r in results:
        print(f"| {r['case']} | {r['contender']} | {r['seconds']:.3f} | {r['ours / this']:.2f}x |")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "merge.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
