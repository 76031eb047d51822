"""What naming a table by catalog adds to a task, against the same task by path.

The task is a CHECKPOINT with no Spark (``engine="python"``) of a small local
table, run as the Spark CLI and the hooks run it: by path, the spec as it is;
by name, the name bound first (the catalog's entry, and for Unity Catalog its
read-write table credentials) and the entry synced after the run (the entry
read again and its columns compared). The catalogs are local servers:
olai-uc-server (Unity Catalog), moto's Glue, and the Hive Metastore of pyspark's
jars (Thrift, an embedded Derby).

Timed (median of ``--reps``, default 20, after a warm-up), per catalog:

- **bind**: the name to its location and credentials;
- **sync**: the entry read and compared after the run;
- **task by path** and **task by name**: the whole checkpoint, and the difference.

**Target:** a name adds under 100 ms to a task against a local server.

Run ``python benchmarks/bench_catalog.py [--quick] [--reps N]``; results go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pyarrow as pa  # noqa: E402
from deltalake import write_deltalake  # noqa: E402

from airflow_delta_provider.operations.catalog import bind_spec  # noqa: E402
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec  # noqa: E402
from airflow_delta_provider.operations.runners import run_spec  # noqa: E402

TARGET_MS = 100.0


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()  # warm-up: imports, connections
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _by_path(location: str) -> None:
    run_spec(None, CheckpointSpec(table_path=location))


def _by_name(name: str) -> None:
    spec, catalog = bind_spec(CheckpointSpec(table_path=name))
    assert catalog is not None
    try:
        run_spec(None, spec, catalog.storage_options())
        catalog.sync()
    finally:
        catalog.close()


def _measure(kind: str, name: str, location: str, reps: int) -> dict[str, float | str]:
    from airflow_delta_provider.delta.catalog.binding import bind

    def bind_only() -> None:
        bound = bind(name, write=True)
        assert bound is not None
        bound.close()

    bound = bind(name, write=True)
    assert bound is not None
    sync_ms = _median_ms(bound.sync, reps)
    bound.close()
    path_ms = _median_ms(lambda: _by_path(location), reps)
    name_ms = _median_ms(lambda: _by_name(name), reps)
    return {
        "catalog": kind,
        "bind_ms": _median_ms(bind_only, reps),
        "sync_ms": sync_ms,
        "task_by_path_ms": path_ms,
        "task_by_name_ms": name_ms,
        "added_ms": name_ms - path_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    reps = 5 if args.quick else args.reps

    from tests.catalogs import HiveMetastore, start_metastore
    from tests.storage_servers import MotoServer, stop_process
    from tests.unity_catalog_server import UnityCatalogServer

    work = Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    uc = UnityCatalogServer(work / "uc")
    moto = MotoServer().start()
    (work / "hms").mkdir()
    metastore, port = start_metastore(work / "hms")
    rows = []
    try:
        root = work / "tables"
        root.mkdir()
        location = (root / "events").as_uri()
        write_deltalake(location, pa.table({"id": list(range(1000))}))

        catalog, schema = uc.schema(root.as_uri())
        uc.create_table(f"{catalog}.{schema}.events", location)
        os.environ["UNITY_CATALOG_URL"] = uc.url
        os.environ["UNITY_CATALOG_TOKEN"] = "bench-token"
        import boto3

        for key, value in {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_GLUE": moto.endpoint,
        }.items():
            os.environ[key] = value
        glue = boto3.client("glue")
        glue.create_database(DatabaseInput={"Name": "bench", "LocationUri": root.as_uri()})

        from airflow_delta_provider.delta.catalog.binding import bind

        registered = bind("glue://bench.events", write=True, create=True, location=location)
        assert registered is not None and registered.sync() == "registered"
        registered.close()

        rows.append(_measure("uc", f"uc://{catalog}.{schema}.events", location, reps))
        rows.append(_measure("glue", "glue://bench.events", location, reps))

        hms = HiveMetastore(port)
        os.environ.update(hms.env)
        database = hms.namespace(root)
        registered = bind(f"hms://{database}.events", write=True, create=True, location=location)
        assert registered is not None and registered.sync() == "registered"
        registered.close()
        rows.append(_measure("hms", f"hms://{database}.events", location, reps))
    finally:
        uc.stop()
        moto.stop()
        stop_process(metastore, grace=10)

    result = {
        "benchmark": "catalog",
        "reps": reps,
        "rows": rows,
        "target_ms": TARGET_MS,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"catalog-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(result, indent=2))
    print(f"## A table by name against by path: CHECKPOINT with no Spark, median of {reps} runs (ms)\n")
    print("| catalog | bind | sync | task by path | task by name | added by the name | target |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['catalog']} | {row['bind_ms']:.1f} | {row['sync_ms']:.1f} | {row['task_by_path_ms']:.1f} | "
            f"{row['task_by_name_ms']:.1f} | {row['added_ms']:.1f} | < {TARGET_MS:.0f} |"
        )
    return 0 if all(float(row["added_ms"]) < TARGET_MS for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
