"""The wall time of one small Delta task, by how it reaches Spark (issue 13).

Each timed run is a one-task DAG run through ``dag.test()`` against Airflow's
SQLite database. The time is the task instance's own (its start to its end,
which includes the XCom push); the whole ``dag.test()`` is reported beside it.

* **spark-submit**: a ``spark`` connection on ``local[2]``: one spark-submit,
  one JVM and SparkContext per task;
* **Spark Connect**: a ``spark_connect`` connection to a warm server on
  ``local[2]`` (started once, warmed by one task before timing);
* **python**: ``engine="python"``, no Spark at all (CHECKPOINT and VACUUM).

Tasks, on a table of 10 files x 10,000 rows written by delta-rs:

* a CHECKPOINT of the latest version;
* an UPDATE touching one file (``WHERE id = 5``);
* a VACUUM of N orphaned files (``--vacuum-files``, default 1,000 and 20,000),
  which places the point where Spark's parallel deletes would pay off.

Targets: Connect <= 2 s per task and >= 4x faster than spark-submit; the
python checkpoint <= 0.5 s.

    python benchmarks/bench_task_latency.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import tests.airflow_env as airflow_env  # noqa: E402  (a throwaway AIRFLOW_HOME, before airflow loads)

SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


def make_table(path: Path, files: int = 10, rows: int = 10_000) -> str:
    import pyarrow as pa
    from deltalake import write_deltalake

    for i in range(files):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        write_deltalake(str(path), pa.table({"id": ids, "val": pa.array([1.0] * rows)}), mode="append")
    return str(path)


def orphans(table: str, count: int) -> None:
    """``count`` unreferenced parquet-named files, old enough for a retention of 0."""
    folder = Path(table) / "orphans"
    folder.mkdir(exist_ok=True)
    for i in range(count):
        (folder / f"part-{i:06d}-orphan.snappy.parquet").write_bytes(b"x")


def run_task(operator: Any) -> tuple[float, float, dict[str, Any]]:
    """(task seconds, dag.test seconds, XCom) of a one-task DAG run."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.sdk import DAG
    from airflow.utils.session import create_session

    with DAG(f"latency_{operator.task_id}_{time.monotonic_ns()}", schedule=None) as dag:
        dag.add_task(operator)
    started = time.perf_counter()
    dag_run = airflow_env.run_dag(dag)
    wall = time.perf_counter() - started
    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=dag.dag_id, run_id=dag_run.run_id).one()
        if str(ti.state) != "success":
            raise RuntimeError(f"{operator.task_id} ended as {ti.state}")
        took = (ti.end_date - ti.start_date).total_seconds()
    return took, wall, airflow_env.xcom(dag_run, operator.task_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="3 repeats, one vacuum size")
    parser.add_argument("--vacuum-files", type=int, action="append")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    vacuum_sizes = args.vacuum_files or ([1_000] if args.quick else [1_000, 20_000])

    from airflow_delta_provider.operators.delta import (
        DeltaCheckpointOperator,
        DeltaUpdateOperator,
        DeltaVacuumOperator,
    )
    from tests.spark_connect_server import ConnectServer

    airflow_env.migrate_db()
    work = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    server = ConnectServer(work)
    os.environ["AIRFLOW_CONN_DELTA_CONNECT"] = json.dumps(
        {"conn_type": "spark_connect", "host": "127.0.0.1", "port": server.port}
    )
    engines = {
        "spark-submit": {"conf": SPARK_CONF},
        "Spark Connect": {"conf": SPARK_CONF, "conn_id": "delta_connect"},
        "python": {"engine": "python"},
    }
    try:
        table = make_table(work / "table")
        # Warm the server (JIT, the package artifact's first upload) and the zip cache.
        run_task(DeltaUpdateOperator(task_id="warm", table_path=table, updates={"val": "val"}, condition="id = 1",
                                     **engines["Spark Connect"]))  # fmt: skip
        run_task(DeltaCheckpointOperator(task_id="warm_submit", table_path=table, **engines["spark-submit"]))

        cases: list[tuple[str, str, Any]] = []
        for engine in ("spark-submit", "Spark Connect", "python"):
            cases.append(("checkpoint", engine, lambda e=engine: DeltaCheckpointOperator(
                task_id="checkpoint", table_path=table, **engines[e])))  # fmt: skip
        for engine in ("spark-submit", "Spark Connect"):
            cases.append(("update touching 1 file", engine, lambda e=engine: DeltaUpdateOperator(
                task_id="update", table_path=table, updates={"val": "val + 1"}, condition="id = 5",
                **engines[e])))  # fmt: skip

        timings: dict[tuple[str, str], dict[str, list[float]]] = {}
        for _ in range(repeat):  # interleaved, so drift hits every contender alike
            for task, engine, build in cases:
                took, wall, result = run_task(build())
                if task.startswith("update"):
                    assert result["metrics"]["numUpdatedRows"] == 1 and result["metrics"]["numRemovedFiles"] == 1
                entry = timings.setdefault((task, engine), {"task": [], "dag_test": []})
                entry["task"].append(took)
                entry["dag_test"].append(wall)

        for size in vacuum_sizes:
            for engine in ("spark-submit", "python"):
                for _ in range(max(1, repeat // 2)):
                    copy = work / f"vacuum-{size}-{engine}"
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(table, copy)
                    orphans(str(copy), size)
                    took, wall, result = run_task(DeltaVacuumOperator(
                        task_id="vacuum", table_path=str(copy), retention_hours=0, retention_check=False,
                        **engines[engine]))  # fmt: skip
                    assert result["metrics"]["numDeletedFiles"] >= size, result
                    entry = timings.setdefault((f"vacuum of {size:,} orphans", engine), {"task": [], "dag_test": []})
                    entry["task"].append(took)
                    entry["dag_test"].append(wall)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    rows = []
    for (task, engine), entry in timings.items():
        submit = timings.get((task, "spark-submit"))
        median = statistics.median(entry["task"])
        ratio = statistics.median(submit["task"]) / median if submit else None
        rows.append(
            {
                "task": task,
                "engine": engine,
                "task_s": round(median, 3),
                "dag_test_s": round(statistics.median(entry["dag_test"]), 3),
                "speedup_vs_spark_submit": None if ratio is None else round(ratio, 2),
                "runs": len(entry["task"]),
            }
        )
    print("| task | engine | task (s) | dag.test (s) | spark-submit / this |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        speedup = "" if r["speedup_vs_spark_submit"] is None else f"{r['speedup_vs_spark_submit']:.1f}x"
        print(f"| {r['task']} | {r['engine']} | {r['task_s']:.3f} | {r['dag_test_s']:.3f} | {speedup} |")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "task_latency.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
