"""Our operations against delta-spark, the reference implementation (issue 23, item 6).

Same Spark (the pip pyspark), same settings (``local[2]``, the same driver
memory, 2 shuffle partitions) and the same data for every contender:

* **ours**: our commands in a warm classic session in this process (no Delta
  jar; CHECKPOINT and snapshot load need no Spark and run in the core);
* **delta-spark**: delta-spark 4.4 in a classic session of its own, in a
  child process and JVM (:mod:`delta_spark_peer`), driven by the same SQL a
  user would write (``UPDATE delta.`path` ...``) or, for snapshot load and
  CHECKPOINT, by ``DeltaLog.forTable(spark, path).update()`` and
  ``DeltaLog.checkpoint`` through py4j, timed inside its JVM;
* **delta-rs** (``deltalake``) and **plain Spark** (the same reads and
  writes without a log, in our session) where the operation applies.

Every timed run starts from its own fresh copy of a base table (``cp -r``
and ``sync``, not timed), and both JVMs collect garbage before it; the
contenders are interleaved and take turns going first; one untimed warm-up
run per contender and case comes first. Each contender's time is measured
where it runs (ours in this process, delta-spark inside its process), so no
pipe is timed. Each run's effect is checked afterwards (rows changed, files
rewritten, deletion vectors written, files deleted) and a mismatch fails the run.

Cases (``--case``): ``update_one`` (1,000 rows in 1 of 50 files),
``update_all`` (``id % 2 = 0``: every file), ``delete_dv`` and ``delete_cow``
(0.1% of the rows, ``id % 1000 = 7``, with deletion vectors and
copy-on-write), ``merge_clustered`` and ``merge_scattered`` (a 1% source, half
updates and half inserts, into 1,000 files: updated keys in one range, or
drawn from the whole table), ``append`` (1M rows), ``optimize`` (1,000 small
files) and ``zorder`` (by ``x, y``, 100 files; also the share of files a
``y = c`` filter reads), ``dv_scan`` (a full scan of a table whose vectors
hide 1% of the rows), ``checkpoint`` (100,000 files: a checkpoint at version
5 and five commits after it), ``vacuum`` (10,000 orphans), ``snapshot`` (the
three logs of bench_snapshot_load) and ``task`` (one UPDATE as an Airflow
task through ``dag.test()``: our ``DeltaUpdateOperator`` over spark-submit
against a ``SparkSubmitOperator`` running the same UPDATE with delta-spark's
jars and confs).

Targets (issue 23): each DML, APPEND and OPTIMIZE <= 1.1x delta-spark;
snapshot load and CHECKPOINT <= 1.0x; the DV scan and the task reported.

    python benchmarks/bench_vs_delta_spark.py [--quick] [--reps N] [--case NAME]...
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # spark-submit

import bench_spark_ops as ops  # noqa: E402  (dataset builder, fresh copies, session)
from delta_spark_peer import DELTA_CONF, DeltaSparkPeer  # noqa: E402

import tests.airflow_env as airflow_env  # noqa: E402  (a throwaway AIRFLOW_HOME, before airflow loads)

CASES = (
    "update_one", "update_all", "delete_dv", "delete_cow", "merge_clustered", "merge_scattered", "append",
    "optimize", "zorder", "dv_scan", "checkpoint", "vacuum", "snapshot", "task",
)  # fmt: skip
DELETE_CONDITION = "id % 1000 = 7"  # 0.1% of the rows, in every file
SCAN_CONDITION = "id % 100 = 3"  # the 1% the scan's vectors hide
UPDATE_ALL_CONDITION = "id % 2 = 0"
SESSION_CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
#: Our OPTIMIZE's default bin size, given to delta-spark too (its own default is 1 GiB).
OPTIMIZE_TARGET = 128 * 1024 * 1024

#: The issue's target per case (ours / delta-spark); None: reported only.
TARGETS: dict[str, float | None] = {
    "update_one": 1.1, "update_all": 1.1, "delete_dv": 1.1, "delete_cow": 1.1, "merge_clustered": 1.1,
    "merge_scattered": 1.1, "append": 1.1, "optimize": 1.1, "zorder": 1.1, "dv_scan": None,
    "checkpoint": 1.0, "vacuum": None, "snapshot": 1.0, "task": None,
}  # fmt: skip


@dataclass(frozen=True)
class Sizes:
    rows: int  # the 50-file table (update, delete, append, scan, vacuum)
    files: int
    small_files: int  # the same rows in many small files (merge, optimize)
    append_rows: int
    merge_source: int
    zorder_rows_per_file: int
    checkpoint_files: int
    orphans: int
    reps: int
    quick: bool


def resolve_sizes(args: argparse.Namespace) -> Sizes:
    quick = args.quick
    rows = args.rows or (1_000_000 if quick else 10_000_000)
    return Sizes(
        rows=rows,
        files=10 if quick else 50,
        small_files=200 if quick else 1_000,
        append_rows=rows // 10,
        merge_source=rows // 100,
        zorder_rows_per_file=2_000 if quick else 20_000,
        checkpoint_files=10_000 if quick else 100_000,
        orphans=1_000 if quick else 10_000,
        reps=args.reps or (1 if quick else 3),
        quick=quick,
    )


# --- Reading a commit's own account of itself -------------------------------------------


def last_commit(path: Path) -> dict[str, Any]:
    """The newest commit's ``commitInfo``, with ``operationMetrics`` as ints where they are numbers."""
    log = path / "_delta_log"
    newest = max(log.glob("[0-9]" * 20 + ".json"))
    for line in newest.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            metrics = info.get("operationMetrics") or {}
            info["metrics"] = {k: int(v) if str(v).lstrip("-").isdigit() else v for k, v in metrics.items()}
            return info
    raise AssertionError(f"{newest} has no commitInfo")


def live_files(path: Path) -> list[Any]:
    from airflow_delta_provider.delta.table import DeltaTable

    return list(DeltaTable(str(path)).snapshot().files)


# --- One case: contenders, interleaved -------------------------------------------------


@dataclass
class Contender:
    """``run(path)`` returns (seconds, whatever ``check`` wants); ``check`` returns problems."""

    name: str
    base: Path | None  # copied afresh before each run; None: runs on nothing it changes
    run: Callable[[Path | None], tuple[float, Any]]
    check: Callable[[Path | None, Any], list[str]] = lambda path, out: []
    prepare: Callable[[Path], None] | None = None  # after the copy, untimed


@dataclass
class Bench:
    spark: Any
    peer: DeltaSparkPeer
    sizes: Sizes
    work: Path
    warmup: bool = True
    problems: list[str] = field(default_factory=list)

    def quiet(self) -> None:
        gc.collect()
        self.spark._jvm.System.gc()
        self.peer.call("gc")

    def measure(self, case: str, contenders: list[Contender], reps: int | None = None) -> dict[str, Any]:
        """Median seconds per contender (and the last output of each)."""
        reps = reps or self.sizes.reps
        times: dict[str, list[float]] = {c.name: [] for c in contenders}
        outputs: dict[str, Any] = {}
        rounds = ([None] if self.warmup else []) + list(range(reps))
        for rep in rounds:
            shift = 0 if rep is None else rep % len(contenders)
            for c in contenders[shift:] + contenders[:shift]:
                path = None
                if c.base is not None:
                    path = ops.fresh_copy(c.base, self.work, "run")
                    if c.prepare:
                        c.prepare(path)
                        os.sync()
                self.quiet()
                took, out = c.run(path)
                problems = [f"{case}/{c.name}: {p}" for p in c.check(path, out)]
                if path is not None:
                    ops.cleanup(path)
                    shutil.rmtree(str(path) + "-plain", ignore_errors=True)
                label = "warm-up" if rep is None else f"run {rep + 1}/{reps}"
                print(f"  {case:<16} {c.name:<28} {label}: {took:8.3f} s", file=sys.stderr, flush=True)
                if rep is None:
                    continue
                self.problems += problems
                times[c.name].append(took)
                outputs[c.name] = out
        return {
            "times_s": times,
            "median_s": {n: statistics.median(t) for n, t in times.items()},
            "outputs": outputs,
        }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def expect(problems: list[str], what: str, got: Any, want: Any) -> None:
    if got != want:
        problems.append(f"{what} = {got!r}, expected {want!r}")


# --- The cases --------------------------------------------------------------------


class Cases:
    """Builds the data once and runs the cases asked for."""

    def __init__(self, bench: Bench, data_dir: Path) -> None:
        self.b = bench
        self.data_dir = data_dir
        self._ds: dict[str, Any] = {}

    @property
    def spark(self) -> Any:
        return self.b.spark

    def peer_sql(self, statement: str) -> Callable[[Path | None], tuple[float, Any]]:
        def run(path: Path | None) -> tuple[float, Any]:
            answer = self.b.peer.sql(statement.format(path=path))
            return answer["seconds"], answer["rows"]

        return run

    # datasets
    def table(self) -> Any:
        if "table" not in self._ds:
            s = self.b.sizes
            self._ds["table"] = ops.build_dataset(self.spark, self.data_dir, s.rows, s.files, s.append_rows, False)
        return self._ds["table"]

    def small_files(self) -> Any:
        if "small" not in self._ds:
            s = self.b.sizes
            self._ds["small"] = ops.build_dataset(self.spark, self.data_dir, s.rows, s.small_files, 1, False)
        return self._ds["small"]

    def dv_table(self) -> Path:
        """The 50-file table with ``delta.enableDeletionVectors`` set (by our commit)."""
        if "dv" not in self._ds:
            from bench_deletion_vectors import enable_deletion_vectors

            path = self.data_dir / f"vs_delta_spark-dv-{self.b.sizes.rows}r"
            if not (path / ".complete").exists():
                shutil.rmtree(path, ignore_errors=True)
                shutil.copytree(self.table().table, path)
                enable_deletion_vectors(path)
                (path / ".complete").write_text("ok")
            self._ds["dv"] = path
        return self._ds["dv"]

    # UPDATE
    def update(self, case: str) -> dict[str, Any]:
        import deltalake

        from airflow_delta_provider.operations.runners import run_spec
        from airflow_delta_provider.operations.update.spec import UpdateSpec

        ds = self.table()
        cond = ds.update_one_condition if case == "update_one" else UPDATE_ALL_CONDITION
        rows = ops.UPDATE_ONE_ROWS if case == "update_one" else ds.rows // 2
        files = 1 if case == "update_one" else ds.files

        def check(path: Path | None, out: Any) -> list[str]:
            problems: list[str] = []
            m = last_commit(path)["metrics"]
            expect(problems, "numUpdatedRows", m.get("numUpdatedRows", m.get("num_updated_rows")), rows)
            expect(problems, "numRemovedFiles", m.get("numRemovedFiles", m.get("num_removed_files")), files)
            return problems

        contenders = [
            Contender("ours", ds.table, lambda p: timed(lambda: run_spec(self.spark, UpdateSpec(table_path=str(p), condition=cond, updates=(("val", "val + 1"),)))), check),
            Contender("delta-spark", ds.table, self.peer_sql(f"UPDATE delta.`{{path}}` SET val = val + 1 WHERE {cond}"), check),
            Contender("delta-rs", ds.table, lambda p: timed(
                lambda: deltalake.DeltaTable(str(p)).update(updates={"val": "val + 1"}, predicate=cond))),
        ]  # fmt: skip
        result = self.b.measure(case, contenders)
        result["note"] = f"{rows:,} of {ds.rows:,} rows, {files} of {ds.files} files rewritten"
        return result

    # DELETE
    def delete(self, case: str) -> dict[str, Any]:
        import deltalake
        from pyspark.sql import functions as F

        from airflow_delta_provider.operations.delete.spec import DeleteSpec
        from airflow_delta_provider.operations.runners import run_spec

        ds = self.table()
        vectors = case == "delete_dv"
        base = self.dv_table() if vectors else ds.table
        rows = len(range(7, ds.rows, 1000))

        def check(path: Path | None, out: Any) -> list[str]:
            problems: list[str] = []
            m = last_commit(path)["metrics"]
            expect(problems, "numDeletedRows", m.get("numDeletedRows", m.get("num_deleted_rows")), rows)
            with_dv = sum(1 for f in live_files(path) if f.deletion_vector is not None)
            expect(problems, "files with a deletion vector", with_dv, ds.files if vectors else 0)
            return problems

        def plain(path: Path | None) -> tuple[float, Any]:
            def go() -> None:
                df = self.spark.read.parquet(str(path))
                df.filter(~F.coalesce(F.expr(DELETE_CONDITION), F.lit(False))).write.parquet(str(path) + "-plain")

            return timed(go)

        contenders = [
            Contender(
                "ours",
                base,
                lambda p: timed(
                    lambda: run_spec(self.spark, DeleteSpec(table_path=str(p), condition=DELETE_CONDITION))
                ),
                check,
            ),
            Contender(
                "delta-spark", base, self.peer_sql(f"DELETE FROM delta.`{{path}}` WHERE {DELETE_CONDITION}"), check
            ),
        ]
        if not vectors:  # delta-rs writes no deletion vectors; plain Spark has none
            contenders += [
                Contender(
                    "delta-rs", base, lambda p: timed(lambda: deltalake.DeltaTable(str(p)).delete(DELETE_CONDITION))
                ),
                Contender("plain Spark", base, plain),
            ]
        result = self.b.measure(case, contenders)
        result["note"] = f"{rows:,} of {ds.rows:,} rows in all {ds.files} files" + (
            "; a deletion vector per file" if vectors else "; every file rewritten"
        )
        return result

    # MERGE
    def merge(self, case: str) -> dict[str, Any]:
        import pyarrow.parquet as pq
        from bench_merge import UPSERT, write_source
        from deltalake import DeltaTable as RsTable

        from airflow_delta_provider.operations.merge.spec import MergeSpec
        from airflow_delta_provider.operations.runners import run_spec

        ds = self.small_files()
        scattered = case == "merge_scattered"
        source_rows = self.b.sizes.merge_source
        source = write_source(self.data_dir / f"vs_delta_spark-merge-{case}", ds.rows, source_rows, scattered)
        arrow_source = pq.read_table(str(source))
        half = source_rows // 2
        removed: dict[str, int] = {}

        def check(name: str) -> Callable[[Path | None, Any], list[str]]:
            def go(path: Path | None, out: Any) -> list[str]:
                problems: list[str] = []
                m = last_commit(path)["metrics"]
                expect(problems, "numTargetRowsUpdated", m.get("numTargetRowsUpdated"), half)
                expect(problems, "numTargetRowsInserted", m.get("numTargetRowsInserted"), source_rows - half)
                removed[name] = m.get("numTargetFilesRemoved")
                return problems

            return go

        sql = (
            f"MERGE INTO delta.`{{path}}` t USING parquet.`{source}` s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        contenders = [
            Contender("ours", ds.table, lambda p: timed(
                lambda: run_spec(self.spark, MergeSpec(
                    table_path=str(p), source=str(source), on="t.id = s.id", clauses=json.dumps(UPSERT)))),
                check("ours")),
            Contender("delta-spark", ds.table, self.peer_sql(sql), check("delta-spark")),
            Contender("delta-rs", ds.table, lambda p: timed(
                lambda: RsTable(str(p)).merge(arrow_source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all().when_not_matched_insert_all().execute())),
        ]  # fmt: skip
        result = self.b.measure(case, contenders)
        result["note"] = (
            f"{source_rows:,} source rows ({half:,} updates) into {ds.rows:,} rows; files rewritten: "
            + ", ".join(f"{n} {v}" for n, v in removed.items())
            + f" of {ds.files}"
        )
        return result

    # APPEND
    def append(self, case: str) -> dict[str, Any]:
        import deltalake
        import pyarrow.dataset as pads

        from airflow_delta_provider.operations.append.spec import AppendSpec
        from airflow_delta_provider.operations.runners import run_spec

        ds = self.table()
        src = str(ds.append_source)

        def check(path: Path | None, out: Any) -> list[str]:
            problems: list[str] = []
            expect(problems, "numOutputRows", last_commit(path)["metrics"].get("numOutputRows"), ds.append_rows)
            return problems

        def delta_rs(path: Path | None) -> tuple[float, Any]:
            return timed(lambda: deltalake.write_deltalake(
                str(path), pads.dataset(src, format="parquet").scanner().to_reader(), mode="append"))  # fmt: skip

        contenders = [
            Contender("ours", ds.table, lambda p: timed(
                lambda: run_spec(self.spark, AppendSpec(table_path=str(p), source=src, source_format="parquet"))),
                check),
            Contender("delta-spark", ds.table, self.peer_sql(f"INSERT INTO delta.`{{path}}` SELECT * FROM parquet.`{src}`"), check),
            Contender("delta-rs", ds.table, delta_rs),
            Contender("plain Spark", ds.table, lambda p: timed(
                lambda: self.spark.read.parquet(src).write.mode("append").parquet(str(p) + "-plain"))),
        ]  # fmt: skip
        result = self.b.measure(case, contenders)
        result["note"] = f"{ds.append_rows:,} rows from parquet"
        return result

    # OPTIMIZE
    def optimize(self, case: str) -> dict[str, Any]:
        from deltalake import DeltaTable as RsTable

        from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
        from airflow_delta_provider.operations.runners import run_spec

        ds = self.small_files()
        written: dict[str, int] = {}

        def check(name: str) -> Callable[[Path | None, Any], list[str]]:
            def go(path: Path | None, out: Any) -> list[str]:
                problems: list[str] = []
                m = last_commit(path)["metrics"]
                expect(problems, "numRemovedFiles", m.get("numRemovedFiles"), ds.files)
                written[name] = m.get("numAddedFiles")
                return problems

            return go

        self.b.peer.sql(f"SET spark.databricks.delta.optimize.maxFileSize = {OPTIMIZE_TARGET}")
        contenders = [
            Contender("ours", ds.table, lambda p: timed(lambda: run_spec(self.spark, OptimizeSpec(table_path=str(p)))), check("ours")),
            Contender("delta-spark", ds.table, self.peer_sql("OPTIMIZE delta.`{path}`"), check("delta-spark")),
            Contender("delta-rs", ds.table, lambda p: timed(
                lambda: RsTable(str(p)).optimize.compact(target_size=OPTIMIZE_TARGET))),
        ]  # fmt: skip
        result = self.b.measure(case, contenders)
        self.b.peer.sql("RESET spark.databricks.delta.optimize.maxFileSize")
        result["note"] = f"{ds.files:,} files of {ds.rows:,} rows, bins of 128 MiB; files written: " + ", ".join(
            f"{n} {v}" for n, v in written.items()
        )
        return result

    def zorder(self, case: str) -> dict[str, Any]:
        import random

        import pyarrow as pa
        from deltalake import DeltaTable as RsTable
        from deltalake import write_deltalake

        from airflow_delta_provider.delta.table import DeltaTable
        from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
        from airflow_delta_provider.operations.runners import run_spec

        per_file = self.b.sizes.zorder_rows_per_file
        base = self.data_dir / f"vs_delta_spark-zorder-{per_file}"
        if not (base / ".complete").exists():
            shutil.rmtree(base, ignore_errors=True)
            rng = random.Random(11)
            for i in range(100):
                write_deltalake(str(base), pa.table({
                    "id": pa.array(range(i * per_file, (i + 1) * per_file), pa.int64()),
                    "x": pa.array([rng.randrange(10**9) for _ in range(per_file)], pa.int64()),
                    "y": pa.array([rng.randrange(10**9) for _ in range(per_file)], pa.int64()),
                }), mode="append")  # fmt: skip
            (base / ".complete").write_text("ok")
        size = DeltaTable(str(base)).snapshot().size_in_bytes
        value = 500_000_000
        shares: dict[str, tuple[float, int]] = {}

        def share(name: str) -> Callable[[Path | None, Any], list[str]]:
            def go(path: Path | None, out: Any) -> list[str]:
                files = live_files(path)
                hits = sum(
                    1
                    for f in files
                    if f.parsed_stats()["minValues"]["y"] <= value <= f.parsed_stats()["maxValues"]["y"]
                )
                shares[name] = (hits / len(files), len(files))
                return []

            return go

        self.b.peer.sql(f"SET spark.databricks.delta.optimize.maxFileSize = {size // 100}")
        contenders = [
            Contender("ours", base, lambda p: timed(
                lambda: run_spec(self.spark, OptimizeSpec(table_path=str(p), zorder_by=("x", "y"), target_size=size // 100))),
                share("ours")),
            Contender("delta-spark", base, self.peer_sql("OPTIMIZE delta.`{path}` ZORDER BY (x, y)"), share("delta-spark")),
            Contender("delta-rs", base, lambda p: timed(
                lambda: RsTable(str(p)).optimize.z_order(["x", "y"], target_size=size // 100)), share("delta-rs")),
        ]  # fmt: skip
        result = self.b.measure(case, contenders)
        self.b.peer.sql("RESET spark.databricks.delta.optimize.maxFileSize")
        result["shares"] = shares
        result["note"] = (
            f"100 files of {per_file:,} random (x, y); share of files a y = c filter reads (files): "
            + ", ".join(f"{n} {s:.2f} ({k})" for n, (s, k) in shares.items())
        )
        return result

    # The scan of a table whose vectors hide 1%
    def dv_scan(self, case: str) -> dict[str, Any]:
        """Every row and column read: the count and the sum of ``hash(*columns)``, the same on both sides.

        Not the ``noop`` sink: delta-spark's PrepareDeltaScan skips DataSource V2
        writes, and its deletion-vector rule then refuses the unpinned file index
        ("Cannot work with a non-pinned table snapshot of the TahoeFileIndex").
        """
        from pyspark.sql import functions as F

        from airflow_delta_provider.delta.table import DeltaTable
        from airflow_delta_provider.operations.delete.spec import DeleteSpec
        from airflow_delta_provider.operations.runners import run_spec
        from airflow_delta_provider.spark.read.scan import scan

        plain_base = self.dv_table()
        hidden = self.data_dir / f"vs_delta_spark-dv-hidden-{self.b.sizes.rows}r"
        if not (hidden / ".complete").exists():
            shutil.rmtree(hidden, ignore_errors=True)
            shutil.copytree(plain_base, hidden)
            run_spec(self.spark, DeleteSpec(table_path=str(hidden), condition=SCAN_CONDITION))
            (hidden / ".complete").write_text("ok")

        def ours(path: Path) -> Callable[[Path | None], tuple[float, Any]]:
            def go(_: Path | None) -> tuple[float, Any]:
                def read() -> Any:
                    df = scan(self.spark, DeltaTable(str(path)).snapshot())
                    return df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.hash(*df.columns)).alias("h")).collect()[0]

                took, row = timed(read)
                return took, {"rows": row["n"], "hash": row["h"]}

            return go

        def theirs(path: Path) -> Callable[[Path | None], tuple[float, Any]]:
            def go(_: Path | None) -> tuple[float, Any]:
                answer = self.b.peer.call("scan", path=str(path))
                return answer["seconds"], {"rows": answer["rows"], "hash": answer["hash"]}

            return go

        contenders = [
            Contender("ours", None, ours(hidden)),
            Contender("delta-spark", None, theirs(hidden)),
            Contender("ours, no vectors", None, ours(plain_base)),
            Contender("delta-spark, no vectors", None, theirs(plain_base)),
        ]
        result = self.b.measure(case, contenders)
        out = result["outputs"]
        for mine, peers in (("ours", "delta-spark"), ("ours, no vectors", "delta-spark, no vectors")):
            if out[mine] != out[peers]:
                self.b.problems.append(f"dv_scan: {mine} read {out[mine]}, {peers} read {out[peers]}")
        if out["ours"]["rows"] != self.b.sizes.rows - len(range(3, self.b.sizes.rows, 100)):
            self.b.problems.append(
                f"dv_scan: {out['ours']['rows']} rows visible, 1% fewer than {self.b.sizes.rows} expected"
            )
        m = result["median_s"]
        result["note"] = (
            f"vectors hide 1% of {self.b.sizes.rows:,} rows; the same table without vectors: ours "
            f"{m['ours, no vectors']:.2f} s, delta-spark {m['delta-spark, no vectors']:.2f} s; "
            f"with / without: ours {m['ours'] / m['ours, no vectors']:.2f}x, "
            f"delta-spark {m['delta-spark'] / m['delta-spark, no vectors']:.2f}x"
        )
        return result

    # CHECKPOINT
    def checkpoint_table(self) -> Path:
        """A log of ``checkpoint_files`` adds: a checkpoint at version 5, versions 6-10 as JSON commits."""
        import bench_snapshot_load as snap
        import pyarrow.parquet as pq

        n = self.b.sizes.checkpoint_files
        case = snap.Case("ckpt", f"{n:,} files", 11, n // 10, 5, 1.0, empty_create=True)
        path = snap.build(case, self.data_dir / "vs_delta_spark")
        log = path / "_delta_log"
        newest = log / f"{10:020d}.checkpoint.parquet"
        if newest.exists():  # leave version 10 for the benchmark to checkpoint
            newest.unlink()
            five = log / f"{5:020d}.checkpoint.parquet"
            rows = pq.ParquetFile(five).metadata.num_rows
            last = {"version": 5, "size": rows, "sizeInBytes": five.stat().st_size, "numOfAddFiles": n // 2}
            (log / "_last_checkpoint").write_text(json.dumps(last))
        return path

    def checkpoint(self, case: str) -> dict[str, Any]:
        import deltalake
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
        from airflow_delta_provider.operations.runners import run_spec

        base = self.checkpoint_table()
        n = self.b.sizes.checkpoint_files

        def check(path: Path | None, out: Any) -> list[str]:
            problems: list[str] = []
            written = sorted((path / "_delta_log").glob(f"{10:020d}.checkpoint*.parquet"))
            if not written:
                return ["no checkpoint of version 10"]
            adds = sum(pc.sum(pc.is_valid(pq.read_table(f, columns=["add"]).column("add"))).as_py() for f in written)
            expect(problems, "adds in the checkpoint", adds, n)
            return problems

        contenders = [
            Contender("ours", base, lambda p: timed(lambda: run_spec(None, CheckpointSpec(table_path=str(p)))), check),
            Contender(
                "delta-spark", base, lambda p: (self.b.peer.call("checkpoint", path=str(p))["seconds"], None), check
            ),
            Contender(
                "delta-rs", base, lambda p: timed(lambda: deltalake.DeltaTable(str(p)).create_checkpoint()), check
            ),
        ]
        result = self.b.measure(case, contenders)
        result["note"] = f"{n:,} live files: a checkpoint at version 5, 5 JSON commits after it; load + write"
        return result

    # VACUUM
    def vacuum(self, case: str) -> dict[str, Any]:
        import deltalake

        from airflow_delta_provider.operations.runners import run_spec
        from airflow_delta_provider.operations.vacuum.spec import VacuumSpec

        ds = self.table()
        orphans = self.b.sizes.orphans

        def check(path: Path | None, out: Any) -> list[str]:
            problems: list[str] = []
            expect(problems, "parquet files left in the table folder", len(list(path.glob("*.parquet"))), ds.files)
            return problems

        contenders = [
            Contender("ours", ds.table, lambda p: timed(lambda: run_spec(
                self.spark, VacuumSpec(table_path=str(p), retention_hours=0, retention_check=False))), check),
            Contender("delta-spark", ds.table, self.peer_sql("VACUUM delta.`{path}` RETAIN 0 HOURS"), check),
            Contender("delta-rs", ds.table, lambda p: timed(lambda: deltalake.DeltaTable(str(p)).vacuum(
                retention_hours=0, dry_run=False, enforce_retention_duration=False, full=True)), check),
        ]  # fmt: skip
        for c in contenders:
            c.prepare = lambda p: ops.add_orphans(p, orphans)
        result = self.b.measure(case, contenders)
        result["note"] = f"{orphans:,} orphans 30 days old beside {ds.files} live files"
        return result

    # Snapshot load
    def snapshot(self, case: str) -> dict[str, Any]:
        import bench_snapshot_load as snap
        import deltalake

        from airflow_delta_provider.delta.table import DeltaTable

        out: dict[str, Any] = {"logs": {}}
        reps = max(3, self.b.sizes.reps)
        for log_case in snap.cases(self.b.sizes.quick)[:3]:
            path = snap.build(log_case, self.data_dir / "snapshot_load")
            counts: dict[str, int] = {}
            with_files: list[float] = []  # delta-spark's load and then numOfFiles, in the same call
            ours_with_files: list[float] = []  # our load and then the file list, in the same call

            def ours(
                _: Path | None, path: Path = path, counts: dict = counts, ours_with_files: list = ours_with_files
            ) -> tuple[float, Any]:
                took, snapshot = timed(lambda: DeltaTable(str(path)).snapshot())
                listed, n = timed(lambda: len(snapshot.file_paths()))
                counts["ours"] = n
                ours_with_files.append(took + listed)
                return took, n

            def theirs(
                _: Path | None, path: Path = path, counts: dict = counts, with_files: list = with_files
            ) -> tuple[float, Any]:
                answer = self.b.peer.call("snapshot", path=str(path))
                counts["delta-spark"] = answer["files"]
                with_files.append(answer["seconds_with_files"])
                return answer["seconds"], answer

            def delta_rs(_: Path | None, path: Path = path, counts: dict = counts) -> tuple[float, Any]:
                took, n = timed(lambda: len(deltalake.DeltaTable(str(path)).file_uris()))
                counts["delta-rs"] = n
                return took, n

            contenders = [
                Contender("ours", None, ours),
                Contender("delta-spark", None, theirs),
                Contender("delta-rs", None, delta_rs),
            ]
            result = self.b.measure(f"snapshot {log_case.key}", contenders, reps)
            for name, n in counts.items():
                if n != log_case.files:
                    self.b.problems.append(f"snapshot {log_case.key}/{name}: {n} files, expected {log_case.files}")
            result["median_s"]["ours + file list"] = statistics.median(ours_with_files[-reps:])
            result["median_s"]["delta-spark + numOfFiles"] = statistics.median(with_files[-reps:])
            result["note"] = log_case.title
            out["logs"][log_case.key] = result
        return out


def warm_up_small(spark: Any, peer: DeltaSparkPeer, work: Path, data_dir: Path, chosen: list[str]) -> None:
    """Every chosen case once on tiny tables, untimed, results dropped."""
    tiny = Sizes(rows=20_000, files=2, small_files=5, append_rows=2_000, merge_source=200, zorder_rows_per_file=200,
                 checkpoint_files=1_000, orphans=100, reps=1, quick=True)  # fmt: skip
    bench = Bench(spark, peer, tiny, work, warmup=False)
    cases = Cases(bench, data_dir)
    for case in chosen:
        print(f"## warm-up (tiny tables): {case}", file=sys.stderr, flush=True)
        try:
            getattr(cases, case.split("_")[0] if case.split("_")[0] in ("update", "delete", "merge") else case)(case)
        except Exception as exc:  # a warm-up failure shows again in the timed run
            print(f"  warm-up of {case} failed: {exc}", file=sys.stderr, flush=True)


# --- The task through dag.test() ------------------------------------------------------

#: The tiny PySpark application the SparkSubmitOperator runs with delta-spark's jars.
UPDATE_APP = '''"""UPDATE a Delta table with delta-spark: argv = table path, SET clause, condition."""
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
path, assignments, condition = sys.argv[1:4]
print(spark.sql(f"UPDATE delta.`{path}` SET {assignments} WHERE {condition}").collect())
spark.stop()
'''


def task_latency(sizes: Sizes, work: Path) -> dict[str, Any]:
    """Our DeltaUpdateOperator over spark-submit against SparkSubmitOperator + delta-spark, through dag.test()."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from bench_task_latency import SPARK_CONF, make_table, run_task

    from airflow_delta_provider.operators.delta import DeltaUpdateOperator
    from tests.jar_cache import jars

    airflow_env.migrate_db()
    work.mkdir(parents=True, exist_ok=True)
    base = Path(make_table(work / "task-base"))
    app = work / "delta_spark_update.py"
    app.write_text(UPDATE_APP)
    delta_jars = ",".join(jars("delta-spark"))

    def ours(path: Path) -> Any:
        return DeltaUpdateOperator(task_id="ours", table_path=str(path), updates={"val": "val + 1"},
                                   condition="id = 5", conf=SPARK_CONF)  # fmt: skip

    def theirs(path: Path) -> Any:
        return SparkSubmitOperator(task_id="delta_spark", application=str(app), conn_id="spark_default",
                                   jars=delta_jars, conf={**SPARK_CONF, **DELTA_CONF},
                                   application_args=[str(path), "val = val + 1", "id = 5"])  # fmt: skip

    times: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    walls: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    problems: list[str] = []
    contenders = [("ours", ours), ("delta-spark", theirs)]
    for rep in [None, *range(sizes.reps)]:
        shift = 0 if rep is None else rep % 2
        for name, build in contenders[shift:] + contenders[:shift]:
            path = ops.fresh_copy(base, work, "task-run")
            took, wall, _ = run_task(build(path))
            info = last_commit(path)
            if info.get("operation") != "UPDATE" or info["metrics"].get("numUpdatedRows") != 1:
                problems.append(f"task/{name}: last commit {info.get('operation')} {info['metrics']}")
            label = "warm-up" if rep is None else f"run {rep + 1}/{sizes.reps}"
            print(
                f"  {'task':<16} {name:<28} {label}: {took:8.3f} s (dag.test {wall:.3f} s)", file=sys.stderr, flush=True
            )
            if rep is not None:
                times[name].append(took)
                walls[name].append(wall)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "times_s": times,
        "median_s": {n: statistics.median(t) for n, t in times.items()},
        "dag_test_median_s": {n: statistics.median(t) for n, t in walls.items()},
        "problems": problems,
        "note": "UPDATE of 1 row in 1 of 10 files (10 x 10,000 rows), spark-submit on local[2]; task instance's time",
    }


# --- Output ---------------------------------------------------------------------------

TITLES = {
    "update_one": "UPDATE touching 1 file",
    "update_all": "UPDATE touching all files",
    "delete_dv": "DELETE 0.1%, deletion vectors",
    "delete_cow": "DELETE 0.1%, copy-on-write",
    "merge_clustered": "MERGE 1% source, clustered keys",
    "merge_scattered": "MERGE 1% source, scattered keys",
    "append": "APPEND",
    "optimize": "OPTIMIZE (compaction)",
    "zorder": "OPTIMIZE ZORDER BY (x, y)",
    "dv_scan": "full scan, vectors hide 1%",
    "checkpoint": "CHECKPOINT",
    "vacuum": "VACUUM",
    "task": "UPDATE task via dag.test(), spark-submit",
}


def rows_of(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per case (snapshot: one per log)."""
    rows = []
    for case, r in results.items():
        if case == "snapshot":
            for key, sub in r["logs"].items():
                rows.append({"case": "snapshot", "title": f"snapshot load ({key}: {sub['note']})", **sub})
        else:
            rows.append({"case": case, "title": TITLES[case], **r})
    for row in rows:
        m = row["median_s"]
        row["ratio"] = m["ours"] / m["delta-spark"]
        target = TARGETS[row["case"]]
        row["target"] = f"<= {target:.1f}x" if target else "reported"
        row["met"] = None if target is None else row["ratio"] <= target
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | ours (s) | delta-spark (s) | ours / delta-spark | target | delta-rs (s) | plain Spark (s) | notes |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in rows:
        m = r["median_s"]
        met = {True: ": met", False: ": not met", None: ""}[r["met"]]
        extra = ""
        if "delta-spark + numOfFiles" in m:
            ours_all, theirs_all = m["ours + file list"], m["delta-spark + numOfFiles"]
            extra = (
                f"with the file list: ours {ours_all:.3f} s, delta-spark (`numOfFiles`) {theirs_all:.3f} s, "
                f"{ours_all / theirs_all:.2f}x; "
            )
        if "dag_test_median_s" in r:
            d = r["dag_test_median_s"]
            extra = f"whole dag.test: ours {d['ours']:.2f} s, delta-spark {d['delta-spark']:.2f} s; "

        def cell(name: str, m: dict[str, float] = m) -> str:
            return f"{m[name]:.3f}" if name in m else "-"

        lines.append(
            f"| {r['title']} | {m['ours']:.3f} | {m['delta-spark']:.3f} | {r['ratio']:.2f}x | {r['target']}{met} "
            f"| {cell('delta-rs')} | {cell('plain Spark')} | {extra}{r.get('note', '')} |"
        )
    return "\n".join(lines)


# --- Main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, one timed run")
    parser.add_argument("--reps", "--repeat", type=int, help="timed runs per contender (default 3; quick 1)")
    parser.add_argument("--case", "--only", action="append", choices=CASES, help="run only these cases")
    parser.add_argument("--rows", type=int, help="rows of the main table (default 10,000,000; quick 1,000,000)")
    parser.add_argument("--driver-memory", default="6g", help="driver memory of both sessions")
    parser.add_argument(
        "--warmup",
        choices=("full", "small", "none"),
        default="full",
        help="untimed warm-up: one run per contender and case at full size (default), every case once on "
        "tiny tables first (cheaper: class loading and code generation paid, not the data's page cache), or none",
    )
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = resolve_sizes(args)
    chosen = [c for c in CASES if not args.case or c in args.case]
    work = args.data_dir / f"vs_delta_spark-work-{os.getpid()}"
    started = time.perf_counter()
    load = [os.getloadavg()[0]]
    results: dict[str, Any] = {}
    problems: list[str] = []
    spark_cases = [c for c in chosen if c != "task"]
    if spark_cases:
        spark = ops.start_spark("local[2]", args.driver_memory, [f"{k}={v}" for k, v in SESSION_CONF.items()])
        peer = DeltaSparkPeer("local[2]", args.driver_memory, SESSION_CONF, args.data_dir / "delta-spark-peer.log")
        bench = Bench(spark, peer, sizes, work, warmup=args.warmup == "full")
        cases = Cases(bench, args.data_dir)
        if args.warmup == "small":
            warm_up_small(spark, peer, work, args.data_dir, [c for c in spark_cases if c != "snapshot"])
        runners = {"update_one": cases.update, "update_all": cases.update, "delete_dv": cases.delete,
                   "delete_cow": cases.delete, "merge_clustered": cases.merge, "merge_scattered": cases.merge,
                   "append": cases.append, "optimize": cases.optimize, "zorder": cases.zorder,
                   "dv_scan": cases.dv_scan, "checkpoint": cases.checkpoint, "vacuum": cases.vacuum,
                   "snapshot": cases.snapshot}  # fmt: skip
        try:
            for case in spark_cases:
                print(f"## {case}", file=sys.stderr, flush=True)
                try:
                    results[case] = runners[case](case)
                except Exception as exc:  # keep the other cases' results
                    bench.problems.append(f"{case}: {type(exc).__name__}: {str(exc)[:500]}")
                    print(f"  {case} FAILED: {exc}", file=sys.stderr, flush=True)
                load.append(os.getloadavg()[0])
        finally:
            shutil.rmtree(work, ignore_errors=True)
            peer.stop()
            spark.stop()
        problems += bench.problems
    if "task" in chosen:
        print("## task", file=sys.stderr, flush=True)
        results["task"] = task_latency(sizes, work)
        problems += results["task"].pop("problems")
        load.append(os.getloadavg()[0])

    rows = rows_of(results)
    import deltalake
    import pyspark

    from tests.jar_cache import DELTA_VERSION

    out = {
        "benchmark": "vs_delta_spark",
        "sizes": sizes.__dict__,
        "master": "local[2]",
        "driver_memory": args.driver_memory,
        "session_conf": SESSION_CONF,
        "versions": {
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
            "delta-spark": DELTA_VERSION,
            "deltalake": deltalake.__version__,
        },
        "cpus": os.cpu_count(),
        "loadavg_1m": load,
        "total_s": time.perf_counter() - started,
        "problems": problems,
        "results": rows,
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    path = args.results_dir / f"vs_delta_spark{'-quick' if sizes.quick else ''}-{stamp}.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    print(
        f"## Ours against delta-spark {DELTA_VERSION}: median of {sizes.reps} "
        f"(load average {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs)\n"
    )
    print(markdown(rows))
    print(f"\nresults: {path}")
    for problem in problems:
        print(f"CHECK FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
