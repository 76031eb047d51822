"""Object storage: snapshot load and sensor pokes on S3 (moto's server), against delta-rs.

* Snapshot load of a log of 10,000 commits with a checkpoint every 10
  (bench_snapshot_load's case (b)), uploaded to a bucket: the core's
  ``DeltaTable(uri).snapshot().file_paths()`` against
  ``deltalake.DeltaTable(uri, storage_options=...).file_uris()``, same
  endpoint, same run. Target: ours / delta-rs <= 1.0.
* One sensor poke (``VersionProbe.newer_than`` of the latest version, and,
  when a version is new, its ``info``) on logs of 100 and of 10,000 versions:
  the store requests it makes and its wall time. Target: equal counts, at most 3.
* One poke of a filtered watch (:class:`~airflow_delta_provider.delta.watch.commit_watch.CommitWatch`,
  what the sensors and triggers poll with): every commit, data changes only
  (the default), and a ``partition`` filter with data changes only, on
  partitioned logs of 100 and 10,000 versions with a checkpoint every 10.
  The partition filter's one-time read of the table's partitioning (at the
  first poke) is timed apart. Target: equal counts at both sizes, at most 3.

The benchmark starts its own ``moto_server`` on a free loopback port and
stops it at the end; nothing leaves the machine. The logs are built once in
``benchmarks/.data/`` and uploaded anew each run.

    python benchmarks/bench_object_store.py [--quick] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_snapshot_load as logs  # noqa: E402  (the log builder)

from airflow_delta_provider.delta.log.version_probe import VersionProbe  # noqa: E402
from airflow_delta_provider.delta.storage import ObjectStorage, open_storage  # noqa: E402
from airflow_delta_provider.delta.table import DeltaTable  # noqa: E402


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server on a free loopback port; yields its endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    binary = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(endpoint, timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def options(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
    }


def upload(local: Path, endpoint: str) -> str:
    """Copy a built table to a new bucket; its URI."""
    bucket = f"bench-{uuid.uuid4().hex[:12]}"
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"))
    uri = f"s3://{bucket}/table"
    storage = open_storage(uri, options(endpoint))
    files = [p for p in local.rglob("*") if p.is_file() and p.name != ".complete"]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: storage.put(p.relative_to(local).as_posix(), p.read_bytes()), files))
    return uri


def median_time(fn: Callable[[], object], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class RequestCounter:
    """Counts the object-store requests made while it is active."""

    NAMES = ("list_dir", "list_dir_async", "get", "get_async", "head", "head_async")

    def __init__(self) -> None:
        self.count = 0
        self._saved: dict[str, object] = {}

    def __enter__(self) -> RequestCounter:
        for name in self.NAMES:
            original = ObjectStorage.__dict__[name]
            self._saved[name] = original

            def counted(storage, *args, _original=original, **kwargs):
                self.count += 1
                return _original(storage, *args, **kwargs)

            setattr(ObjectStorage, name, counted)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(ObjectStorage, name, original)


def poke(probe: VersionProbe, after: int) -> int | None:
    """What one sensor poke does: is there a version after ``after``; if so, its commitInfo."""
    found = probe.newer_than(after)
    if found is not None:
        probe.info(found)
    return found


def run(quick: bool, reps: int, data_dir: Path) -> dict:
    case_b = next(c for c in logs.cases(quick) if c.key == "b")
    small = logs.Case("p", "100 commits, checkpoint every 10", 100, 1, 10, 1.0)
    big_local, small_local = logs.build(case_b, data_dir), logs.build(small, data_dir)
    out: dict = {"case": case_b.title}
    with moto_server() as endpoint:
        opts = options(endpoint)
        for key, value in opts.items():
            os.environ[key] = value  # the core's default chain; delta-rs gets storage_options
        big_uri, small_uri = upload(big_local, endpoint), upload(small_local, endpoint)

        ours = median_time(lambda: len(DeltaTable(big_uri).snapshot().file_paths()), reps)
        import deltalake

        rs = median_time(lambda: len(deltalake.DeltaTable(big_uri, storage_options=opts).file_uris()), reps)
        assert len(DeltaTable(big_uri).snapshot().file_paths()) == len(
            deltalake.DeltaTable(big_uri, storage_options=opts).file_uris()
        )
        out["snapshot"] = {"ours_s": ours, "delta_rs_s": rs, "ratio": ours / rs, "files": case_b.files}

        out["poke"] = {}
        for label, uri, versions in (("100", small_uri, small.commits), (f"{case_b.commits}", big_uri, case_b.commits)):
            probe = VersionProbe(uri)
            latest = versions - 1
            row = {}
            for what, after in (("nothing new", latest), ("one new version", latest - 1)):
                with RequestCounter() as counter:
                    poke(probe, after)
                row[what] = {
                    "requests": counter.count,
                    "seconds": median_time(lambda p=probe, a=after: poke(p, a), reps),
                }
            out["poke"][label] = row
        out["filtered_pokes"] = filtered_pokes(endpoint, data_dir, reps, (100, 1_000 if quick else 10_000))
    return out


#: The filters of the filtered pokes, as the sensors take them.
POKE_FILTERS = {
    "every commit": {"data_changes_only": False},
    "data changes (default)": {},
    "partition ds=d0, data changes": {"partition": {"ds": "d0"}},
}


def partitioned_log(versions: int, data_dir: Path) -> Path:
    """A log of ``versions`` commits, each adding one file to partition ``ds=d0``,
    with a checkpoint at the last multiple of 10 (built once)."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from tests.delta_logs import write_log

    root = data_dir / f"pokes-partitioned-{versions}"
    if not (root / ".complete").exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        write_log(root, versions, partition_value="d0")
        table = DeltaTable(str(root))
        write_checkpoint(table, table.snapshot((versions - 1) // 10 * 10))
        (root / ".complete").write_text("ok")
    return root


def filtered_pokes(endpoint: str, data_dir: Path, reps: int, sizes: tuple[int, ...]) -> dict:
    """Requests and median time of one filtered poke: nothing new, and one new commit."""
    from airflow_delta_provider.delta.watch.commit_filter import CommitFilter
    from airflow_delta_provider.delta.watch.commit_watch import CommitWatch

    out: dict = {}
    for versions in sizes:
        uri = upload(partitioned_log(versions, data_dir), endpoint)
        latest = versions - 1
        for name, filters in POKE_FILTERS.items():
            watch = CommitWatch(VersionProbe(uri), latest, CommitFilter.build(**filters))
            started = time.perf_counter()
            if watch.needs_partitioning:
                watch.load_partitioning()
            first = time.perf_counter() - started

            def poll(after: int, watch: CommitWatch = watch) -> object:
                watch.cursor = after
                watch.skipped.clear()
                return watch.poll()

            row: dict = {"partitioning_s": first if filters.get("partition") else None}
            for what, after in (("nothing new", latest), ("one new version", latest - 1)):
                with RequestCounter() as counter:
                    fired = poll(after)
                assert (fired is None) == (what == "nothing new"), (name, what)
                row[what] = {"requests": counter.count, "seconds": median_time(lambda a=after: poll(a), reps)}
            out.setdefault(name, {})[str(versions)] = row
    return out


def markdown(r: dict) -> str:
    s = r["snapshot"]
    lines = [
        f"**Snapshot load on S3 (moto), {r['case']}, {s['files']:,} live files**\n",
        "| ours | delta-rs | ours / delta-rs | target |",
        "|---:|---:|---:|---|",
        f"| {s['ours_s']:.3f} s | {s['delta_rs_s']:.3f} s | {s['ratio']:.2f}x | <= 1.0x |",
        "",
        "**One sensor poke on S3 (moto)**\n",
        "| log | nothing new: requests | time | one new version: requests | time |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, row in r["poke"].items():
        a, b = row["nothing new"], row["one new version"]
        lines.append(
            f"| {label} versions | {a['requests']} | {a['seconds'] * 1000:.1f} ms | {b['requests']} | "
            f"{b['seconds'] * 1000:.1f} ms |"
        )
    lines += [
        "",
        "**One poke of a filtered watch on S3 (moto), partitioned logs**\n",
        "| filter | log | nothing new: requests | time | one new version: requests | time | first poke's partitioning |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, by_size in r["filtered_pokes"].items():
        for size, row in by_size.items():
            a, b = row["nothing new"], row["one new version"]
            first = "-" if row["partitioning_s"] is None else f"{row['partitioning_s'] * 1000:.0f} ms"
            lines.append(
                f"| {name} | {int(size):,} versions | {a['requests']} | {a['seconds'] * 1000:.1f} ms | "
                f"{b['requests']} | {b['seconds'] * 1000:.1f} ms | {first} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the log, for a smoke test")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions (default 5, quick 3)")
    parser.add_argument("--data-dir", type=Path, default=HERE / ".data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    result = run(args.quick, reps, args.data_dir)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "object_store.json").write_text(json.dumps(result, indent=2))
    print(f"## Object storage: median of {reps} runs{' (quick)' if args.quick else ''}\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
