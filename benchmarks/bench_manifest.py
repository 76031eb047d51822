"""Symlink manifests (issue 26): GENERATE against delta-spark's, and what the
post-commit update costs a commit.

A table of ``--files`` adds (10,000; ``--quick`` 1,000) in ``--partitions``
Hive partitions (100; ``--quick`` 10), committed by the core with a
checkpoint (neither engine reads a data file to write manifests, so the adds
name files that are not there). Each timed run works on a fresh copy of the
table (the copy is not timed), the contenders interleaved:

* GENERATE, ours: ``symlink_manifest.generate(table, table.snapshot())``
  (the log read included), no Spark;
* GENERATE, delta-spark: ``GENERATE symlink_format_manifest FOR TABLE``
  in a classic session of its own (:mod:`delta_spark_peer`, ``local[2]``,
  two shuffle partitions as in ``bench_vs_delta_spark.py``),
  timed inside it, on a path its ``DeltaLog`` cache has not seen;
* a one-file append of ours to a table with
  ``delta.compatibility.symlinkFormatManifest.enabled`` (its incremental
  update of one partition included) against the same append without it.

Each figure is the median of ``--repeat`` runs (default 3). Target: ours
GENERATE <= delta-spark's.

    python benchmarks/bench_manifest.py [--quick] [--repeat N] [--files N --partitions N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

#: As bench_vs_delta_spark.py's peer session: two shuffle partitions on two cores.
SESSION_CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
ENABLED = {"delta.compatibility.symlinkFormatManifest.enabled": "true"}
SCHEMA = (
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"day","type":"string","nullable":true,"metadata":{}}]}'
)


def build_table(root: Path, files: int, partitions: int, properties: dict[str, str]) -> Path:
    """Version 0 with ``files`` adds and its checkpoint; manifests generated when the property asks."""
    from airflow_delta_provider.delta.actions.model import AddFile, Metadata
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {}, None)
    txn.update_metadata(Metadata.new(SCHEMA, ["day"], properties, created_time=1))
    txn.add_all(
        AddFile(
            f"day=2026-01-{i % partitions:03d}/part-{i:05d}-c000.snappy.parquet",
            {"day": f"2026-01-{i % partitions:03d}"},
            1024,
            1,
            stats='{"numRecords":100}',
        )
        for i in range(files)
    )
    txn.commit()
    write_checkpoint(table, table.snapshot())
    return root


def ours_generate(path: Path) -> float:
    from airflow_delta_provider.delta.symlink_manifest import generate
    from airflow_delta_provider.delta.table import DeltaTable

    start = time.perf_counter()
    table = DeltaTable(path)
    generate(table, table.snapshot())
    return time.perf_counter() - start


def one_file_append(path: Path) -> float:
    from airflow_delta_provider.delta.actions.model import AddFile
    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(path)
    snapshot = table.snapshot()
    snapshot.files  # noqa: B018 - loaded before the clock starts, as a command has it
    add = AddFile("day=2026-01-000/part-new.snappy.parquet", {"day": "2026-01-000"}, 1024, 1, stats='{"numRecords":1}')
    start = time.perf_counter()
    txn = table.transaction("WRITE", {"mode": "Append"}, snapshot)
    txn.add(add)
    txn.commit()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int)
    parser.add_argument("--partitions", type=int)
    args = parser.parse_args()
    files = args.files or (1_000 if args.quick else 10_000)
    partitions = args.partitions or (10 if args.quick else 100)

    from delta_spark_peer import DeltaSparkPeer

    work = Path(tempfile.mkdtemp(prefix="bench-manifest-"))
    plain = build_table(work / "plain", files, partitions, {})
    enabled = build_table(work / "enabled", files, partitions, ENABLED)
    unmanaged = build_table(work / "unmanaged", files, partitions, {})
    peer = DeltaSparkPeer("local[2]", "2g", SESSION_CONF, work / "peer.log")
    try:
        runs: dict[str, list[float]] = {"ours": [], "delta-spark": [], "append+manifest": [], "append": []}
        peer.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{shutil.copytree(plain, work / 'warm')}`")
        for i in range(args.repeat):
            runs["ours"].append(ours_generate(shutil.copytree(plain, work / f"ours-{i}")))
            theirs = shutil.copytree(plain, work / f"theirs-{i}")
            runs["delta-spark"].append(
                peer.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{theirs}`")["seconds"]
            )
            runs["append+manifest"].append(one_file_append(shutil.copytree(enabled, work / f"on-{i}")))
            runs["append"].append(one_file_append(shutil.copytree(unmanaged, work / f"off-{i}")))
    finally:
        peer.stop()
    median = {name: statistics.median(times) for name, times in runs.items()}
    ratio = median["ours"] / median["delta-spark"]
    print(f"{files} files in {partitions} partitions, median of {args.repeat}")
    print(f"GENERATE: ours {median['ours']:.3f} s, delta-spark {median['delta-spark']:.3f} s, "
          f"ours / delta-spark {ratio:.2f}x (target <= 1x: {'met' if ratio <= 1 else 'missed'})")  # fmt: skip
    print(f"one-file append: {median['append']:.3f} s without manifests, "
          f"{median['append+manifest']:.3f} s with the incremental update")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
