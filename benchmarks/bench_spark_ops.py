"""Spark operations: our engine against delta-rs and plain Spark, same run.

Issue 3, "Measure": on a table of 10M rows ``(id long, content string, val
double)`` in 50 files, with one warm local SparkSession (``local[2]``, 4g
driver), four operations each run by three contenders:

=============  ==========================  ==========================  ==========================
operation      ours (``operations``)       delta-rs (``deltalake``)    plain Spark (no Delta)
=============  ==========================  ==========================  ==========================
update_one     ``run_update``, a condition ``DeltaTable.update``       read every file, rewrite
               on an id range in one file                              every row with ``when``
update_all     ``run_update``, ``id % 2 =  ``DeltaTable.update``       read every file, rewrite
               0`` (every file touched)                                every row with ``when``
append         ``run_append`` of a 1M-row  ``write_deltalake(mode=    read the source, write it
               parquet source              "append")`` of the source   as parquet into the folder
vacuum         VACUUM (run_spec) of 10,000 ``DeltaTable.vacuum(full=   list the folder, then
               orphan files                True)``                     ``os.remove`` in the driver
=============  ==========================  ==========================  ==========================

Both updates set ``val = val + 1``. Plain Spark is the same reads and writes
without a log: it cannot skip files, so for ``update_one`` it rewrites the
whole table into a new folder (the issue's "plain Spark without skipping").
Its vacuum has no log to consult either: it lists the table folder and removes
every file whose mtime is older than a day (the orphans are dated 30 days
back; the live files are fresh copies), one ``os.remove`` at a time in the
driver (``--plain-vacuum spark`` deletes them with
``sparkContext.parallelize(paths).foreach(os.remove)`` instead).

Every timed run works on its own fresh copy of the table (``cp -r``, then
``sync``, neither timed), so runs are independent and each contender starts
from the same bytes with a warm page cache. Ours and delta-rs vacuum with
retention 0 and the retention check off; the orphans are old anyway. Before
timing, every contender runs every operation once on a small warm-up table,
so JVM class loading, code generation and Python workers are paid up front.
Each run's work is checked afterwards (rows updated, files touched, rows
appended, files deleted) and any mismatch is reported and fails the run.

Run ``.venv/bin/python benchmarks/bench_spark_ops.py [--rows N] [--files F]
[--repeat R] [--quick]``; ``--quick`` is 1M rows in 10 files, 1,000 orphans,
one repetition. The tables are built once in ``benchmarks/.data/`` (our
append of a Spark-written parquet source); results go to
``benchmarks/results/`` as JSON, and a markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CONTENDERS = ("ours", "plain_spark", "delta_rs")
OPS = ("update_one", "update_all", "append", "vacuum")
#: Rows the one-file update changes (an id range inside one file).
UPDATE_ONE_ROWS = 1000
#: How old the orphan files are made (os.utime), and the plain vacuum's cutoff.
ORPHAN_AGE_S = 30 * 24 * 3600
PLAIN_VACUUM_CUTOFF_S = 24 * 3600

TITLES = {
    "update_one": "update touching 1 file",
    "update_all": "update touching all files",
    "append": "append",
    "vacuum": "vacuum of orphan files",
}


# --- Configuration --------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    rows: int
    files: int
    append_rows: int
    orphans: int
    repeat: int
    quick: bool

    @property
    def label(self) -> str:
        return (
            f"{self.rows:,} rows in {self.files} files; append {self.append_rows:,} rows; "
            f"{self.orphans:,} orphans; median of {self.repeat}"
        )


def resolve_sizes(args: argparse.Namespace) -> Sizes:
    """The sizes asked for; ``--quick`` changes the defaults, explicit flags win."""
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    return Sizes(
        rows=rows,
        files=args.files or (10 if args.quick else 50),
        append_rows=args.append_rows or max(1, rows // 10),
        orphans=args.orphans if args.orphans is not None else (1_000 if args.quick else 10_000),
        repeat=args.repeat or (1 if args.quick else 3),
        quick=args.quick,
    )


# --- Building the tables (once, cached) ------------------------------------------------


@dataclass
class Dataset:
    """A base table (never modified) and the parquet source the append reads."""

    table: Path
    append_source: Path
    rows: int
    files: int
    append_rows: int
    update_one_condition: str = ""
    table_bytes: int = 0

    def describe(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "append_source": str(self.append_source),
            "rows": self.rows,
            "files": self.files,
            "append_rows": self.append_rows,
            "update_one_condition": self.update_one_condition,
            "table_bytes": self.table_bytes,
        }


def _rows_frame(spark: Any, start: int, end: int, partitions: int) -> Any:
    """``(id, content, val)`` for ids in ``[start, end)``; contiguous id ranges per partition."""
    from pyspark.sql import functions as F

    return spark.range(start, end, 1, partitions).select(
        F.col("id"),
        F.concat(F.lit("content-"), F.substring(F.md5(F.col("id").cast("string")), 1, 12)).alias("content"),
        (F.rand(seed=start) * 1000.0).alias("val"),
    )


def build_dataset(spark: Any, root: Path, rows: int, files: int, append_rows: int, rebuild: bool) -> Dataset:
    """Write (or reuse) the base table of ``rows`` rows in ``files`` files and an append source.

    Spark writes the rows as ``files`` parquet files (one per id range), and
    our APPEND (``AppendSpec``) commits them as a new Delta table. For that append,
    each source file is read as its own Spark partition, so the table gets
    exactly one data file per source file, with disjoint id ranges.
    """
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.operations.append.spec import AppendSpec
    from airflow_delta_provider.operations.runners import run_spec

    home = root / f"spark_ops-{rows}r-{files}f"
    ds = Dataset(home / "table", home / f"append-source-{append_rows}r", rows, files, append_rows)
    marker = home / ".complete"
    if rebuild and home.exists():
        shutil.rmtree(home)
    if not marker.exists():
        if home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True)
        source = home / "table-source"
        _rows_frame(spark, 0, rows, files).write.parquet(str(source))
        with _one_partition_per_file(spark):
            run_spec(spark, AppendSpec(table_path=str(ds.table), source=str(source), source_format="parquet"))
        shutil.rmtree(source)
        marker.write_text(json.dumps({"rows": rows, "files": files, "built": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    if not ds.append_source.exists():
        per_file = max(1, rows // files)
        partitions = max(1, round(append_rows / per_file))
        tmp = ds.append_source.with_name(ds.append_source.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _rows_frame(spark, rows, rows + append_rows, partitions).write.parquet(str(tmp))
        tmp.rename(ds.append_source)

    snap = DeltaTable(str(ds.table)).snapshot()
    if snap.num_records != rows:
        raise SystemExit(f"{ds.table}: {snap.num_records} rows, expected {rows}; rerun with --rebuild")
    if len(snap.files) != files:
        print(f"warning: {ds.table} has {len(snap.files)} data files, not {files}", file=sys.stderr)
        ds.files = len(snap.files)
    ds.update_one_condition = _one_file_condition(snap)
    ds.table_bytes = snap.size_in_bytes
    return ds


class _one_partition_per_file:
    """Make Spark read each parquet file as one partition (no packing, no splitting)."""

    KEYS: ClassVar[dict[str, str]] = {
        "spark.sql.files.maxPartitionBytes": str(1 << 40),
        "spark.sql.files.openCostInBytes": str(1 << 40),
    }

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.KEYS.items():
            self.saved[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)

    def __exit__(self, *exc: Any) -> None:
        for key, value in self.saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)


def _one_file_condition(snapshot: Any) -> str:
    """An id range of :data:`UPDATE_ONE_ROWS` rows inside the middle data file, by its stats."""
    ranges = []
    for f in snapshot.files:
        stats = f.parsed_stats() or {}
        lo = (stats.get("minValues") or {}).get("id")
        hi = (stats.get("maxValues") or {}).get("id")
        if lo is None or hi is None:
            raise SystemExit(f"data file {f.path} has no id stats: the one-file update cannot be aimed")
        ranges.append((int(lo), int(hi)))
    ranges.sort()
    lo, hi = ranges[len(ranges) // 2]
    hi = min(hi, lo + UPDATE_ONE_ROWS - 1)
    return f"id >= {lo} AND id <= {hi}"


# --- Per-run copies ----------------------------------------------------------------


def fresh_copy(base: Path, work: Path, name: str) -> Path:
    """``cp -r`` of ``base`` to ``work/name``, flushed to disk (not timed)."""
    dst = work / name
    if dst.exists():
        shutil.rmtree(dst)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-r", str(base), str(dst)], check=True)
    os.sync()
    return dst


def time_contenders(
    contenders: dict[str, Callable[[Path], None]], base: Path, work: Path, repeat: int
) -> dict[str, float]:
    """Each contender's median seconds over ``repeat`` rounds, each run on a
    fresh copy of ``base`` (not timed), contenders interleaved in every round.
    A contender may write beside its copy (``<copy>-plain``): removed after."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, run in contenders.items():
            copy = fresh_copy(base, work, name.replace(" ", "_"))
            started = time.perf_counter()
            run(copy)
            times[name].append(time.perf_counter() - started)
            shutil.rmtree(str(copy) + "-plain", ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return {name: statistics.median(t) for name, t in times.items()}


def ratio_rows(case: str, median: dict[str, float]) -> list[dict[str, Any]]:
    """One result row per contender: its seconds, and ours divided by its."""
    return [
        {"case": case, "contender": name, "seconds": round(t, 3), "ours / this": round(median["ours"] / t, 2)}
        for name, t in median.items()
    ]


def add_orphans(table: Path, count: int) -> None:
    """``count`` tiny files in the table root that no log version references, 30 days old."""
    old = time.time() - ORPHAN_AGE_S
    for i in range(count):
        path = table / f"part-{i % 100000:05d}-{uuid.uuid4()}-c000.snappy.parquet"
        path.write_bytes(b"orphan")
        os.utime(path, (old, old))
    os.sync()


# --- The contenders ------------------------------------------------------------------


@dataclass
class Runner:
    """What each contender runs for each operation on a prepared copy."""

    spark: Any
    ds: Dataset
    all_condition: str
    plain_vacuum: str = "driver"
    schema: Any = field(init=False)

    def __post_init__(self) -> None:
        from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

        self.schema = StructType(
            [StructField("id", LongType()), StructField("content", StringType()), StructField("val", DoubleType())]
        )

    def condition(self, op: str) -> str:
        return self.ds.update_one_condition if op == "update_one" else self.all_condition

    def run(self, contender: str, op: str, path: Path) -> dict[str, Any]:
        return getattr(self, f"{contender}_{op.split('_')[0]}")(op, path)

    # ours
    def ours_update(self, op: str, path: Path) -> dict[str, Any]:
        from airflow_delta_provider.operations.runners import run_spec
        from airflow_delta_provider.operations.update.spec import UpdateSpec

        spec = UpdateSpec(table_path=str(path), condition=self.condition(op), updates=(("val", "val + 1"),))
        result = run_spec(self.spark, spec)
        return {"version": result.version, **result.metrics}

    def ours_append(self, op: str, path: Path) -> dict[str, Any]:
        from airflow_delta_provider.operations.append.spec import AppendSpec
        from airflow_delta_provider.operations.runners import run_spec

        spec = AppendSpec(table_path=str(path), source=str(self.ds.append_source), source_format="parquet")
        result = run_spec(self.spark, spec)
        return {"version": result.version, **result.metrics}

    def ours_vacuum(self, op: str, path: Path) -> dict[str, Any]:
        from airflow_delta_provider.operations.runners import run_spec
        from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

        result = run_spec(self.spark, VacuumSpec(table_path=str(path), retention_hours=0, retention_check=False))
        return {"version": result.version, **result.metrics}

    # delta-rs
    def delta_rs_update(self, op: str, path: Path) -> dict[str, Any]:
        import deltalake

        return dict(deltalake.DeltaTable(str(path)).update(updates={"val": "val + 1"}, predicate=self.condition(op)))

    def delta_rs_append(self, op: str, path: Path) -> dict[str, Any]:
        import deltalake
        import pyarrow.dataset as pads

        source = pads.dataset(str(self.ds.append_source), format="parquet")
        reader = source.scanner().to_reader()
        deltalake.write_deltalake(str(path), reader, mode="append")
        return {"version": deltalake.DeltaTable(str(path)).version()}

    def delta_rs_vacuum(self, op: str, path: Path) -> dict[str, Any]:
        import deltalake

        deleted = deltalake.DeltaTable(str(path)).vacuum(
            retention_hours=0, dry_run=False, enforce_retention_duration=False, full=True
        )
        return {"numDeletedFiles": len(deleted)}

    # plain Spark
    def plain_spark_update(self, op: str, path: Path) -> dict[str, Any]:
        from pyspark.sql import functions as F

        out = path.with_name(path.name + "-out")
        cond = F.expr(self.condition(op))
        df = self.spark.read.schema(self.schema).parquet(str(path))
        df.select(
            "id",
            "content",
            F.when(F.coalesce(cond, F.lit(False)), F.col("val") + 1).otherwise(F.col("val")).alias("val"),
        ).write.mode("overwrite").parquet(str(out))
        return {"output": str(out)}

    def plain_spark_append(self, op: str, path: Path) -> dict[str, Any]:
        self.spark.read.parquet(str(self.ds.append_source)).write.mode("append").parquet(str(path))
        return {}

    def plain_spark_vacuum(self, op: str, path: Path) -> dict[str, Any]:
        paths = _old_files(path, time.time() - PLAIN_VACUUM_CUTOFF_S)
        if self.plain_vacuum == "spark":
            slices = max(1, min(len(paths) // 1000 + 1, self.spark.sparkContext.defaultParallelism * 4))
            self.spark.sparkContext.parallelize(paths, slices).foreach(os.remove)
        else:
            for p in paths:
                os.remove(p)
        return {"numDeletedFiles": len(paths)}


def _old_files(root: Path, cutoff: float) -> list[str]:
    """Files under ``root`` (hidden ``_``/``.`` names skipped) last modified before ``cutoff``."""
    found, stack = [], [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.name.startswith(("_", ".")):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    found.append(entry.path)
    return found


def expected_checks(
    op: str, contender: str, out: dict[str, Any], sizes: Sizes, ds: Dataset, updated_all: int
) -> list[str]:
    """What a run must have done; the list of problems (empty when right)."""
    problems = []

    def want(key: str, value: int) -> None:
        got = out.get(key)
        if got is None or int(got) != value:
            problems.append(f"{op}/{contender}: {key} = {got}, expected {value}")

    if op in ("update_one", "update_all"):
        rows = UPDATE_ONE_ROWS if op == "update_one" else updated_all
        if contender == "ours":
            want("numUpdatedRows", rows)
            want("numRemovedFiles", 1 if op == "update_one" else ds.files)
        elif contender == "delta_rs":
            want("num_updated_rows", rows)
    elif op == "append" and contender == "ours":
        want("numOutputRows", ds.append_rows)
    elif op == "vacuum":
        want("numDeletedFiles", sizes.orphans)
    return problems


# --- Timing ------------------------------------------------------------------------


def _quiet(spark: Any) -> None:
    """Collect garbage on both sides so one run's garbage does not land on the next."""
    gc.collect()
    spark._jvm.System.gc()


def prepare(op: str, base: Path, work: Path, name: str, orphans: int) -> Path:
    path = fresh_copy(base, work, name)
    if op == "vacuum":
        add_orphans(path, orphans)
    return path


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(path.with_name(path.name + "-out"), ignore_errors=True)


def warm_up(runner: Runner, work: Path, ops: list[str], orphans: int) -> None:
    """Run every contender's every operation once on the (small) warm-up table."""
    for op in ops:
        for contender in CONTENDERS:
            path = prepare(op, runner.ds.table, work, f"warmup-{op}-{contender}", orphans)
            try:
                runner.run(contender, op, path)
            finally:
                cleanup(path)


def measure(runner: Runner, sizes: Sizes, ops: list[str], work: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Median seconds per contender per op; contenders take turns going first."""
    results, problems = [], []
    updated_all = _rows_matching_all(runner)
    for op in ops:
        load_before = os.getloadavg()[0]
        times: dict[str, list[float]] = {c: [] for c in CONTENDERS}
        last: dict[str, dict[str, Any]] = {}
        for rep in range(sizes.repeat):
            order = CONTENDERS[rep % 3 :] + CONTENDERS[: rep % 3]
            for contender in order:
                path = prepare(op, runner.ds.table, work, f"{op}-{contender}-{rep}", sizes.orphans)
                try:
                    _quiet(runner.spark)
                    start = time.perf_counter()
                    out = runner.run(contender, op, path)
                    took = time.perf_counter() - start
                finally:
                    cleanup(path)
                times[contender].append(took)
                last[contender] = out
                problems += expected_checks(op, contender, out, sizes, runner.ds, updated_all)
                print(
                    f"  {op:<10} {contender:<11} run {rep + 1}/{sizes.repeat}: {took:8.3f} s",
                    file=sys.stderr,
                    flush=True,
                )
        med = {c: statistics.median(t) for c, t in times.items()}
        load = (load_before, os.getloadavg()[0])
        if max(load) > 1.5 * (os.cpu_count() or 1):  # this run alone keeps about one load per core
            print(
                f"  note: load average {load[0]:.1f} -> {load[1]:.1f} during {op}: other work shares the CPUs",
                file=sys.stderr,
            )
        results.append(
            {
                "op": op,
                "title": TITLES[op],
                "condition": runner.condition(op) if op.startswith("update") else None,
                "times_s": times,
                "median_s": med,
                "min_s": {c: min(t) for c, t in times.items()},
                "loadavg_1m_before_after": load,
                "ours_over_plain_spark": med["ours"] / med["plain_spark"],
                "ours_over_delta_rs": med["ours"] / med["delta_rs"],
                "target": TARGETS[op][0],
                "target_met": TARGETS[op][1](med),
                "last_output": {c: {k: v for k, v in o.items() if k != "output"} for c, o in last.items()},
            }
        )
    return results, problems


def _rows_matching_all(runner: Runner) -> int:
    """Rows the update_all condition matches in the base table (plain Spark count, not timed)."""
    from pyspark.sql import functions as F

    df = runner.spark.read.schema(runner.schema).parquet(str(runner.ds.table))
    return df.filter(F.coalesce(F.expr(runner.all_condition), F.lit(False))).count()


#: The issue's targets (printed next to the ratios, never asserted): text, and a check on the medians.
TARGETS: dict[str, tuple[str, Callable[[dict[str, float]], bool | None]]] = {
    "update_one": (
        "ours < 1.5 s and ours/plain <= 0.33x (3x faster)",
        lambda m: m["ours"] < 1.5 and m["ours"] * 3 <= m["plain_spark"],
    ),
    "update_all": ("ours/plain <= 1.1x", lambda m: m["ours"] <= 1.1 * m["plain_spark"]),
    "append": ("ours/plain <= 1.1x", lambda m: m["ours"] <= 1.1 * m["plain_spark"]),
    "vacuum": ("none set", lambda m: None),
}


# --- Output ------------------------------------------------------------------------


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| op | ours (s) | plain Spark (s) | delta-rs (s) | ours / plain Spark | ours / delta-rs | target | met |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        m = r["median_s"]
        met = {True: "yes", False: "no", None: "-"}[r["target_met"]]
        lines.append(
            f"| {r['title']} | {m['ours']:.3f} | {m['plain_spark']:.3f} | {m['delta_rs']:.3f} "
            f"| {r['ours_over_plain_spark']:.2f}x | {r['ours_over_delta_rs']:.2f}x | {r['target']} | {met} |"
        )
    return "\n".join(lines)


def versions() -> dict[str, str]:
    import deltalake
    import pyarrow
    import pyspark

    return {
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "deltalake": deltalake.__version__,
        "pyarrow": pyarrow.__version__,
    }


# --- Main ------------------------------------------------------------------------------


def start_spark(master: str, driver_memory: str, extra: list[str]) -> Any:
    from airflow_delta_provider.spark.runtime.session import get_or_create_session

    conf = {"spark.driver.memory": driver_memory}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--spark-conf wants KEY=VALUE, got {item!r}")
        conf[key] = value
    spark = get_or_create_session(master=master, conf=conf, app_name="bench-spark-ops")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, help="rows in the table (default 10,000,000; quick 1,000,000)")
    parser.add_argument("--files", type=int, help="data files in the table (default 50; quick 10)")
    parser.add_argument("--repeat", type=int, help="timed runs per contender per op (default 3; quick 1)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1M rows, 10 files, 1,000 orphans, 1 run")
    parser.add_argument("--append-rows", type=int, help="rows the append adds (default rows / 10)")
    parser.add_argument("--orphans", type=int, help="orphan files the vacuum deletes (default 10,000; quick 1,000)")
    parser.add_argument("--only", action="append", choices=OPS, help="run only these operations")
    parser.add_argument(
        "--all-condition",
        default="id % 2 = 0",
        help="update_all's condition (default 'id %% 2 = 0': every file, half the rows)",
    )
    parser.add_argument(
        "--plain-vacuum",
        choices=("driver", "spark"),
        default="driver",
        help="plain Spark's deletes: os.remove in the driver (default) or parallelize(paths).foreach(os.remove)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached tables")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up round")
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = resolve_sizes(args)
    ops = [op for op in OPS if not args.only or op in args.only]
    work = args.data_dir / f"spark_ops-work-{os.getpid()}"
    started = time.perf_counter()
    spark = start_spark(args.master, args.driver_memory, args.spark_conf)
    try:
        t0 = time.perf_counter()
        ds = build_dataset(spark, args.data_dir, sizes.rows, sizes.files, sizes.append_rows, args.rebuild)
        built = time.perf_counter() - t0
        if not args.no_warmup:
            warm_rows = min(sizes.rows, 100_000)
            warm = build_dataset(spark, args.data_dir, warm_rows, 2, max(1, warm_rows // 10), args.rebuild)
            # Enough orphans to take the same delete path (driver or executors) as the timed runs.
            warm_up(Runner(spark, warm, args.all_condition, args.plain_vacuum), work, ops, min(sizes.orphans, 1200))
        print(f"## Spark operations: {sizes.label}{' (quick)' if sizes.quick else ''}\n", file=sys.stderr, flush=True)
        results, problems = measure(Runner(spark, ds, args.all_condition, args.plain_vacuum), sizes, ops, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()

    args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = {
        "benchmark": "spark_ops",
        "sizes": sizes.__dict__,
        "dataset": ds.describe(),
        "all_condition": args.all_condition,
        "master": args.master,
        "driver_memory": args.driver_memory,
        "spark_conf": args.spark_conf,
        "plain_spark_vacuum": (
            "os.scandir listing of files older than a day, then "
            + ("os.remove in the driver" if args.plain_vacuum == "driver" else "parallelize(paths).foreach(os.remove)")
        ),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        **versions(),
        "build_s": built,
        "total_s": time.perf_counter() - started,
        "problems": problems,
        "results": results,
    }
    path = args.results_dir / f"spark_ops{'-quick' if sizes.quick else ''}-{stamp}.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    print(f"## Spark operations: median seconds ({sizes.label}; table {ds.table_bytes / 1e6:,.0f} MB)\n")
    print(markdown(results))
    print(f"\nresults: {path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path}")
    for problem in problems:
        print(f"CHECK FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
