"""The cost of retries: appends through a store failing 10% of its requests, against none.

Sequential appends of one small file each through the core (data write,
snapshot, commit, post-commit work), on moto's S3 behind the tests' fault
proxy (``tests/fault_proxy.py``), first with no fault, then with 10% of
requests failing, every fault kind alike (seeded). Client timeout 1 s, the
default back-off (100 ms doubling). Reported: wall time per append, the
faults injected, and the requests sent. Everything runs on loopback and
stops at the end.

    python benchmarks/bench_store_faults.py [--appends N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa

from tests.delta.conftest import create_table, write_data_file
from tests.fault_proxy import FaultProxy, random_faults
from tests.storage_servers import MotoServer, s3_backend

SCHEMA = pa.schema([("id", pa.int64())])


def appends(proxy: FaultProxy, backend, rel: str, n: int) -> float:
    from airflow_delta_provider.delta.table import DeltaTable

    uri = backend.uri(rel)
    create_table(uri, SCHEMA)
    table = DeltaTable(uri, {**backend.storage_options, "timeout": "1s"})
    started = time.perf_counter()
    for i in range(n):
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
        txn.add(write_data_file(uri, pa.table({"id": [i]}, schema=SCHEMA)))
        txn.commit(metrics={}, token=f"{rel}-{i}")
    elapsed = time.perf_counter() - started
    assert table.latest_version() == n
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    server = MotoServer().start()
    proxy = FaultProxy(server.port, hold_seconds=1.5)
    try:
        backend = s3_backend(server, proxy.endpoint)
        os.environ.update(backend.env)
        proxy.requests.clear()
        clean = appends(proxy, backend, "clean", args.appends)
        clean_requests = len(proxy.requests)
        proxy.requests.clear()
        with proxy.inject(*random_faults(0.10), seed=args.seed) as hit:
            faulty = appends(proxy, backend, "faulty", args.appends)
        kinds: dict[str, int] = {}
        for i in hit:
            kinds[i.fault] = kinds.get(i.fault, 0) + 1
        print(
            f"{args.appends} appends, no faults: {clean:.2f} s ({clean / args.appends * 1000:.0f} ms each), "
            f"{clean_requests} requests"
        )
        print(
            f"{args.appends} appends, 10% faults: {faulty:.2f} s ({faulty / args.appends * 1000:.0f} ms each), "
            f"{len(proxy.requests)} forwarded, {len(hit)} faults {kinds}"
        )
        print(f"ratio: {faulty / clean:.2f}x")
    finally:
        proxy.close()
        server.stop()


if __name__ == "__main__":
    main()
