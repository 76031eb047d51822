"""VACUUM LITE against a full VACUUM on S3 (moto's server): store requests and time (issue 25).

The table: ``--files`` data files (default 100,000; ``--quick``: 5,000) added
1,000 per commit, in 10 partitions, with a checkpoint every 10 commits (the
core's post-commit work); then a scheduled VACUUM LITE records its state
(``_delta_log/_last_vacuum_info``), and 10 more commits each replace 1% of
the files (a ``remove`` and a new ``add``), so 10% are now removable
(``--removable-share``: another multiple of 1%, one such commit per 1%;
0.01 is a daily vacuum's single day of changes). Data files are a few bytes
each: VACUUM never reads them.

Each mode runs on its own fresh upload of that table (the dry run first, then
the real run, which the dry run leaves untouched), at retention 0 (check
off), through VACUUM's runner without Spark (``engine="python"``):

* FULL: lists every folder of the table, deletes what no version needs;
* LITE: reads only the commits since the recorded vacuum, lists ``_delta_log`` only;
* LITE, first run: the same table without ``_last_vacuum_info`` (every commit is read).

Every request is counted at the wire, by a forwarding proxy in front of moto
(tests/storage_servers.py's ``FaultProxy``), for the dry run (planning only)
and for the real run (planning, the START/END commits, the bulk deletes).
Both modes delete the same files here (the table has no orphans).
Target (issue 25): LITE <= 0.2x FULL in store requests.

The table is built cheaply: tiny files on local disk and a log committed
directly by the core (no Spark), then uploaded with the object store API in
32 threads. LITE never lists the data folders, so its uploads hold the log
and the removable files only (the files it deletes); FULL's holds every file.

    python benchmarks/bench_vacuum_lite.py [--quick] [--files N] [--removable-share 0.01]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_object_store import moto_server, options  # noqa: E402

from airflow_delta_provider.delta.actions.model import AddFile, Metadata  # noqa: E402
from airflow_delta_provider.delta.log.last_vacuum_info import LAST_VACUUM_INFO, write_last_vacuum_info  # noqa: E402
from airflow_delta_provider.delta.storage import open_storage  # noqa: E402
from airflow_delta_provider.delta.table import DeltaTable  # noqa: E402
from airflow_delta_provider.operations.runners import run_spec  # noqa: E402
from airflow_delta_provider.operations.vacuum.spec import FULL_VACUUM, LITE_VACUUM, VacuumSpec  # noqa: E402
from tests.storage_servers import FaultProxy  # noqa: E402

PER_COMMIT = 1000
PARTITIONS = 10
REWRITE_COMMITS = 10  # of 1% each: the default share, 0.10
SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}'


def build(root: Path, files: int, rewrite_commits: int = REWRITE_COMMITS) -> Path:
    """The table described above, on local disk (reused when already built),
    with ``rewrite_commits`` commits each replacing 1% of the files."""
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    old = int(time.time() * 1000) - 30 * 24 * 3600 * 1000
    counter = iter(range(10**9))

    def new_add() -> AddFile:
        i = next(counter)
        part = f"p={i % PARTITIONS}"
        name = f"part-{i:05d}-{uuid.uuid4()}.c000.snappy.parquet"
        (root / part).mkdir(exist_ok=True)
        (root / part / name).write_bytes(b"x")
        return AddFile(f"{part}/{name}", {"p": str(i % PARTITIONS)}, 1, old, True)

    table = DeltaTable(str(root))
    txn = table.transaction("CREATE TABLE", snapshot=None)
    txn.update_metadata(Metadata.new(SCHEMA, ["p"], {}, created_time=old))
    txn.add_all(new_add() for _ in range(min(files, PER_COMMIT)))
    txn.commit(metrics=None, token=None)
    for start in range(PER_COMMIT, files, PER_COMMIT):
        txn = table.transaction("WRITE", snapshot=table.snapshot())
        txn.add_all(new_add() for _ in range(min(PER_COMMIT, files - start)))
        txn.commit(metrics=None, token=None)
    write_last_vacuum_info(table.log_store, table.snapshot().version)  # a LITE vacuum ran here
    share = max(1, files // 100)
    for _ in range(rewrite_commits):
        snap = table.snapshot()
        victims = sorted(snap.files, key=lambda f: f.path)[:share]
        txn = table.transaction("UPDATE", snapshot=snap)
        txn.read_files(victims)
        txn.add_all(v.remove(old) for v in victims)
        txn.add_all(new_add() for _ in victims)
        txn.commit(metrics=None, token=None)
    (root / ".complete").write_text("")
    return root


def upload(local: Path, endpoint: str, with_state: bool, data: str = "all") -> str:
    """A fresh copy of the table on moto: the log (``_last_vacuum_info`` only
    ``with_state``) and the data files, ``all`` or only the ``removable`` ones."""
    bucket = f"bench-{uuid.uuid4().hex[:12]}"
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"))
    uri = f"s3://{bucket}/table"
    storage = open_storage(uri, options(endpoint))
    from concurrent.futures import ThreadPoolExecutor

    live = {f.path for f in DeltaTable(str(local)).snapshot().files} if data == "removable" else set()

    def wanted(p: Path) -> bool:
        rel = p.relative_to(local).as_posix()
        if rel.startswith("_delta_log/"):
            return with_state or p.name != LAST_VACUUM_INFO
        return p.name != ".complete" and rel not in live

    paths = [p for p in local.rglob("*") if p.is_file() and wanted(p)]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda p: storage.put(p.relative_to(local).as_posix(), p.read_bytes()), paths))
    return uri


def measure(proxy: FaultProxy, uri: str, endpoint: str, lite: bool, dry_run: bool) -> dict:
    proxy.requests.clear()
    start = time.perf_counter()
    spec = VacuumSpec(
        table_path=uri, retention_hours=0, retention_check=False, dry_run=dry_run,
        mode=LITE_VACUUM if lite else FULL_VACUUM,
    )  # fmt: skip
    result = run_spec(None, spec, options(endpoint))
    seconds = time.perf_counter() - start
    sent = list(proxy.requests)
    metrics = result.metrics
    return {
        "requests": len(sent),
        "lists": sum("list-type" in path for _m, path in sent),
        "seconds": round(seconds, 3),
        "files": int(metrics.get("numFilesToDelete", metrics.get("numDeletedFiles", 0))),
    }


def rewrite_commits_for(share: float) -> int:
    """The commits of 1% each that make ``share`` of the files removable."""
    commits = round(share * 100)
    if commits < 1 or abs(commits - share * 100) > 1e-6:
        raise ValueError(f"--removable-share must be a positive multiple of 0.01, got {share}")
    return commits


def run(files: int, data_dir: Path, removable_share: float = REWRITE_COMMITS / 100) -> dict:
    commits = rewrite_commits_for(removable_share)
    name = f"vacuum-lite-{files}" + ("" if commits == REWRITE_COMMITS else f"-removable{commits}pct")
    local = build(data_dir / name, files, commits)
    out: dict = {
        "files": files,
        "removable_share": commits / 100,
        "removable": commits * max(1, files // 100),
        "runs": {},
    }
    try:
        with moto_server() as endpoint:
            proxy = FaultProxy(int(endpoint.rsplit(":", 1)[1]))
            try:
                for name, lite, state in (
                    ("FULL", False, True),
                    ("LITE", True, True),
                    ("LITE, first run", True, False),
                ):
                    started = time.perf_counter()
                    uri = upload(local, endpoint, state, "removable" if lite else "all")
                    out.setdefault("upload_seconds", {})[name] = round(time.perf_counter() - started, 1)
                    for dry in (True, False):  # a dry run changes nothing: the real run follows on the same copy
                        run_name = f"{name}{' (dry run)' if dry else ''}"
                        out["runs"][run_name] = measure(proxy, uri, proxy.endpoint, lite, dry)
            finally:
                proxy.close()
    except subprocess.TimeoutExpired:  # a moto holding many objects is slow to stop; the results stand
        pass
    return out


def report(result: dict) -> str:
    runs = result["runs"]
    lines = [
        f"**VACUUM on S3 (moto): {result['files']:,} files, {result['removable']:,} removable**\n",
        "| run | store requests | of them LIST | files | time (s) | requests / FULL's |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs.items():
        full = runs["FULL (dry run)" if "dry" in name else "FULL"]["requests"]
        lines.append(
            f"| {name} | {r['requests']} | {r['lists']} | {r['files']:,} | {r['seconds']} | "
            f"{r['requests'] / full:.2f}x |"
        )
    lines.append("\nTarget: LITE <= 0.2x FULL in store requests.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 files")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument(
        "--removable-share",
        type=float,
        default=REWRITE_COMMITS / 100,
        help="share of the files made removable since the last vacuum, a multiple of 0.01 "
        "(one commit per 1%%; default 0.10, 10 commits; 0.01: a daily vacuum)",
    )
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    files = args.files or (5_000 if args.quick else 100_000)
    try:
        commits = rewrite_commits_for(args.removable_share)
    except ValueError as exc:
        parser.error(str(exc))
    result = run(files, args.data_dir, args.removable_share)
    print(report(result))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if commits == REWRITE_COMMITS else f"_removable{commits}pct"
    (args.results_dir / f"vacuum_lite{suffix}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
