"""``io="hadoop"`` on S3 through 10% of requests failing: S3A and our storage layer behind one fault proxy.

In hadoop mode Spark's S3A connector reads and writes the data files with
its own retries, while the log reads, the commits and the post-commit files
go through the provider's storage layer. Here S3A's endpoint (its per-bucket
settings, as :mod:`~airflow_delta_provider.spark.runtime.hadoop_store_conf`
makes them) is the fault proxy in front of moto, as is the core's: every
fault kind, seeded, on the ``_delta_log`` requests only, and then on every
request (data files too; cut-off bodies on the log's only, see :data:`SCOPES`). APPEND, UPDATE, DELETE, MERGE and OPTIMIZE each
commit exactly once with the right rows, or fail with a retryable error and
leave the table as it was; run again as Airflow retries a task (same
token), each lands once.

A Spark Connect server with hadoop-aws is a JVM of its own: this runs only
with ``FAULTS_ALL=1`` (``make test-faults``). Its Azure twin, through ABFS on
Azurite, is ``test_hadoop_abfs_under_faults.py``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

import pytest

from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.in_process import InProcessCommand
from airflow_delta_provider.spark.runtime.hadoop_store_conf import hadoop_store_settings
from tests.fault_proxy import FAULTS, LOG, FaultProxy, Rule, lost_commit_answers, random_faults
from tests.jar_cache import jars
from tests.spark.runtime.test_hadoop_s3a import S3A_GUARDS, _orders, _put_parquet, _rows
from tests.spark.test_operations_under_faults import as_a_retried_task
from tests.spark_connect_server import ConnectServer
from tests.storage_servers import Backend, FaultyStore, faulty, s3_backend, s3_settings

pytestmark = [
    pytest.mark.skipif(os.environ.get("FAULTS_ALL") != "1", reason="FAULTS_ALL=1 (make test-faults) only"),
    pytest.mark.timeout(1800),  # a JVM with hadoop-aws, six operations each way: long on a shared machine
]

#: S3A's own retries, quick: under faults it must retry rather than fail at the first one.
S3A_RETRIES = {
    "spark.hadoop.fs.s3a.retry.limit": "7",
    "spark.hadoop.fs.s3a.retry.interval": "50ms",
    "spark.hadoop.fs.s3a.retry.throttle.limit": "7",
    "spark.hadoop.fs.s3a.retry.throttle.interval": "50ms",
    "spark.hadoop.fs.s3a.attempts.maximum": "5",
}
FAST = {"timeout": "5s", "retry_init_backoff": "10ms", "retry_max_backoff": "200ms"}
#: Where the faults fall: the log's requests only (every kind), or every request. On the data
#: files' requests a cut-off body is left out: the AWS SDK lets a reset while it parses an XML
#: answer (a listing) escape S3A's retries as an UncheckedIOException, so one in a few hundred
#: requests fails the operation (a retryable StorageError, the table as it was: seen in this
#: test before the rule was narrowed), and a DELETE that reads many files rarely gets through.
SCOPES = {
    "log": random_faults(0.10, paths=(LOG,)),
    "everything": [
        *random_faults(0.10 * 6 / 7, faults=tuple(f for f in FAULTS if f != "drop_body")),
        Rule("drop_body", paths=(LOG,), probability=0.10 / 7),
    ],
}


@pytest.fixture(scope="module")
def bucket(moto_server) -> Iterator[FaultyStore]:
    proxy = FaultProxy(moto_server.port, hold_seconds=0.8)
    yield faulty(s3_backend(moto_server, proxy.endpoint), proxy)
    proxy.close()


@pytest.fixture(scope="module")
def s3a_server(bucket, tmp_path_factory) -> Iterator[ConnectServer]:
    settings = hadoop_store_settings(parse_location(bucket.base), bucket.env)
    server = ConnectServer(
        tmp_path_factory.mktemp("s3a-faults"),
        env=bucket.env,
        conf={**S3A_GUARDS, **S3A_RETRIES},
        jars=jars("hadoop-aws"),
        secret_conf={f"spark.hadoop.{key}": value for key, value in settings.items()},
    )
    yield server
    server.stop()
    assert bucket.secret not in server.log.read_text(errors="replace"), "secret in the server's log"


def _expected() -> list[tuple]:
    rows = {i: (i, f"p{i % 3}", i * 10, f"n{i}") for i in range(60)}
    rows.update({i: (i, p, a * 10, n) for i, (_, p, a, n) in rows.items() if i % 3 == 0})
    rows = {i: r for i, r in rows.items() if i % 5 != 0}
    rows.update({i: (i, f"p{i % 3}", i * 7, f"n{i}") for i in range(50, 70)})
    return sorted(rows.values())


def operations_through_faults(
    store: FaultyStore, server: ConnectServer, root: str, scope: str, direct: Backend, partition_by: str | None
) -> None:
    """APPEND (no faults), then APPEND, UPDATE, DELETE, MERGE and OPTIMIZE
    in ``hadoop`` mode on ``<root>/<scope>/orders`` through ``SCOPES[scope]``
    (seeded), each run as Airflow retries a task; each commits once, in
    order, and delta-rs, reading through ``direct`` (not the proxy: the
    proxy is the operations' path, not the check's), finds the right rows."""
    src = f"src-{scope}"
    first = _put_parquet(store, f"{src}/first.parquet", _orders(range(0, 40)), root)
    second = _put_parquet(store, f"{src}/second.parquet", _orders(range(40, 60)), root)
    changes = _put_parquet(store, f"{src}/changes.parquet", _orders(range(50, 70), amount=7), root)
    uri = f"{root}/{scope}/orders"
    options = {**store.storage_options, **FAST}
    clauses = (
        '[{"when": "matched", "update": {"amount": "s.amount", "name": "s.name"}},'
        ' {"when": "not_matched", "insert": "*"}]'
    )
    partitioning = ["--partition-by", partition_by] if partition_by else []
    InProcessCommand(
        ["append", uri, "--source", first, "--format", "parquet", *partitioning, "--io", "hadoop"],
        remote=server.url,
        storage_options=options,
    ).run()
    steps = {
        "append": ["--source", second, "--format", "parquet"],
        "update": ["--condition", "id % 3 = 0", "--set", "amount=amount * 10"],
        "delete": ["--condition", "id % 5 = 0"],
        "merge": ["--source", changes, "--source-format", "parquet", "--on", "t.id = s.id",
                  "--clauses", clauses, "--target-alias", "t", "--source-alias", "s"],
        "optimize": [],
    }  # fmt: skip
    table = DeltaTable(uri, store.storage_options)
    failures: Counter[str] = Counter()
    with store.faults.inject(*SCOPES[scope], seed=13) as hit:
        for operation, arguments in steps.items():
            token = f"{scope}-{operation}"
            argv = [operation, uri, *arguments, "--io", "hadoop", "--token", token]
            command = InProcessCommand(argv, remote=server.url, storage_options=options)
            as_a_retried_task(command.run, table, token, failures)
    assert table.latest_version() == len(steps)
    assert [table.find_commit(f"{scope}-{op}")[0] for op in steps] == list(range(1, len(steps) + 1))  # type: ignore[index]
    assert _rows(direct, uri) == _expected()
    assert hit, "no fault was injected"
    print(
        f"{scope}: {len(hit)} faults {dict(Counter(i.fault for i in hit))}; lost commit answers {lost_commit_answers(hit)}; task retries {dict(failures)}"
    )


@pytest.mark.parametrize("scope", SCOPES)
def test_hadoop_operations_through_ten_percent_faults_commit_once(s3a_server, bucket, moto_server, scope):
    direct = Backend("s3", bucket.base, s3_settings(moto_server.endpoint))
    operations_through_faults(bucket, s3a_server, f"s3a://{bucket.bucket}", scope, direct, partition_by="part")
