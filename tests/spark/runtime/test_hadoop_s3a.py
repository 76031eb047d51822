"""``io="hadoop"`` on S3 for real: Hadoop's S3A connector against moto's server.

The shared test session's Spark has no ``hadoop-aws``; these tests run Spark
with it (``tests.jar_cache.jars("hadoop-aws")``: hadoop-aws 3.5.0 and the AWS
SDK v2 2.35.4 modules, without the bundle) in processes of their own:

- a Spark Connect server started with the jars, which runs every operation
  twice on the same data, once ``io=hadoop`` (Spark's parquet through
  ``s3a://``) and once ``io=arrow`` (pyarrow through obstore): the rows, the
  committed actions' shape and the metrics must be the same at every step;
- real spark-submits of the CLI with ``--jars``, through the Airflow hook,
  where ``io=auto`` picks ``hadoop`` and the driver gives S3A the per-bucket
  settings of :mod:`~airflow_delta_provider.spark.runtime.hadoop_store_conf`,
  from a ``storage_conn_id`` and from the environment.

S3A is told where moto is only through the per-bucket settings: the global
endpoint is a closed loopback port and the global credentials provider has
no keys, so a bucket setting that did not arrive fails the test instead of
reaching for AWS. Which writer made a data file is read from its footer
(``parquet-mr`` is Spark's, ``parquet-cpp-arrow`` is pyarrow's).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.storage import open_storage, parse_location
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.in_process import InProcessCommand
from airflow_delta_provider.spark.runtime.hadoop_store_conf import hadoop_store_settings
from airflow_delta_provider.spark.runtime.io_mode import resolve_io
from airflow_delta_provider.spark.runtime.remote_session import close, connect_mode, connect_session
from tests.airflow_env import SPARK_TEST_CONF
from tests.jar_cache import jars
from tests.spark_connect_server import ConnectServer
from tests.storage_servers import Backend, s3_backend

#: Test-only S3A settings: what a bucket setting does not cover fails here, on loopback, at once.
S3A_GUARDS = {
    "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9",  # the discard port: nothing listens
    "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
    "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "spark.hadoop.fs.s3a.retry.limit": "1",
    "spark.hadoop.fs.s3a.attempts.maximum": "1",
}
#: Commit metrics that depend on bytes (parquet-mr and pyarrow encode alike rows in other sizes) or time.
_SIZE_OR_TIME = ("Bytes", "FileSize", "TimeMs")
SPARK_WRITER = "parquet-mr"
ARROW_WRITER = "parquet-cpp-arrow"
CONN_ID = "lake_s3a"


@pytest.fixture(scope="module")
def bucket(moto_server) -> Backend:
    return s3_backend(moto_server)


@pytest.fixture(scope="module")
def s3a_server(bucket, tmp_path_factory) -> Iterator[ConnectServer]:
    """A Spark Connect server with hadoop-aws. S3A gets the bucket's settings as
    :func:`hadoop_store_settings` makes them from the store variables (in a
    private properties file); its Python workers (``io=arrow``) get the same
    variables as their environment."""
    settings = hadoop_store_settings(parse_location(bucket.base), bucket.env)
    server = ConnectServer(
        tmp_path_factory.mktemp("s3a-connect"),
        env=bucket.env,
        conf=S3A_GUARDS,
        jars=jars("hadoop-aws"),
        secret_conf={f"spark.hadoop.{key}": value for key, value in settings.items()},
    )
    yield server
    server.stop()
    assert bucket.secret not in server.log.read_text(errors="replace"), "secret in the server's log"


def _put_parquet(bucket: Backend, rel: str, table: pa.Table, spark_root: str | None = None) -> str:
    """Put ``table`` as parquet at ``rel`` in the bucket; its name for Spark
    (under ``spark_root``, by default ``s3a://<bucket>``)."""
    sink = io.BytesIO()
    pq.write_table(table, sink)
    open_storage(bucket.base, bucket.storage_options).put(rel, sink.getvalue())
    return f"{spark_root or f's3a://{bucket.bucket}'}/{rel}"


def _orders(ids: range, amount: int = 10) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": [f"p{i % 3}" for i in ids],
            "amount": pa.array([i * amount for i in ids], pa.int64()),
            "name": [f"n{i}" for i in ids],
        }
    )


def _rows(bucket: Backend, uri: str) -> list[tuple]:
    """The table's rows as delta-rs reads them (deletion vectors applied)."""
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    read = QueryBuilder().register("t", RsTable(uri, storage_options=bucket.storage_options)).execute("SELECT * FROM t")
    return sorted(tuple(r.values()) for r in pa.table(read.read_all()).to_pylist())


def _shape(bucket: Backend, uri: str, version: int) -> dict[str, Any]:
    """Commit ``version`` without what two I/O modes may differ in: file names,
    sizes and times, ids, and byte or time metrics."""
    raw = DeltaTable(uri, bucket.storage_options).storage.get(f"_delta_log/{version:020d}.json")
    actions = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)

    def file_shape(kind: str, fields: tuple[str, ...]) -> list[str]:
        return sorted(
            json.dumps([a[kind].get(f) for f in fields] + ["deletionVector" in a[kind]], sort_keys=True)
            for a in actions
            if kind in a
        )

    others = []
    for action in actions:
        if {"add", "remove", "cdc", "commitInfo"} & action.keys():
            continue
        body = json.loads(json.dumps(action))
        for value in body.values():
            if isinstance(value, dict):
                value.pop("id", None)
                value.pop("createdTime", None)
        others.append(json.dumps(body, sort_keys=True))
    return {
        "operation": info["operation"],
        "parameters": info.get("operationParameters"),
        "metrics": {
            k: v for k, v in (info.get("operationMetrics") or {}).items() if not any(w in k for w in _SIZE_OR_TIME)
        },
        "adds": file_shape("add", ("partitionValues", "stats", "dataChange")),
        "removes": file_shape("remove", ("partitionValues", "dataChange")),
        "cdc": file_shape("cdc", ("partitionValues", "dataChange")),
        "others": sorted(others),
    }


def _writers(bucket: Backend, uri: str) -> set[str]:
    """Which parquet writer made each data file of the table's latest version."""
    table = DeltaTable(uri, bucket.storage_options)
    found = set()
    for add in table.snapshot().files:
        footer = pq.ParquetFile(io.BytesIO(table.storage.get(add.path))).metadata
        found.add(footer.created_by.split(" ")[0])
    return found


def _changes(bucket: Backend, uri: str) -> list[tuple]:
    """The rows a CHANGES command wrote under ``uri`` (a folder of parquet files)."""
    storage = open_storage(uri, bucket.storage_options)
    rows = []
    for meta in storage.list_tree(""):
        if not meta.is_dir and meta.path.endswith(".parquet"):
            for row in pq.read_table(io.BytesIO(storage.get(meta.path))).to_pylist():
                row.pop("_commit_timestamp", None)
                rows.append(tuple(sorted(row.items())))
    return sorted(rows)


def test_every_operation_through_s3a_matches_arrow_on_the_same_data(s3a_server, bucket):
    """APPEND, UPDATE, DELETE, MERGE, OPTIMIZE, CHECKPOINT, CHANGES and VACUUM,
    each run ``io=hadoop`` on one table and ``io=arrow`` on its twin, from the
    same sources: after every step the commits have the same shape and
    metrics and the tables the same rows. Spark wrote the hadoop twin's data
    files, pyarrow the arrow twin's."""
    first = _put_parquet(bucket, "src/first.parquet", _orders(range(0, 40)))
    second = _put_parquet(bucket, "src/second.parquet", _orders(range(40, 60)))
    changes = _put_parquet(bucket, "src/changes.parquet", _orders(range(50, 70), amount=7))
    tables = {mode: f"s3a://{bucket.bucket}/{mode}/orders" for mode in ("hadoop", "arrow")}
    outputs = {mode: f"s3a://{bucket.bucket}/{mode}/changes" for mode in tables}
    clauses = json.dumps(
        [
            {"when": "matched", "update": {"amount": "s.amount", "name": "s.name"}},
            {"when": "not_matched", "insert": "*"},
        ]
    )
    steps: list[tuple[str, list[str]]] = [
        ("append", ["--source", first, "--format", "parquet", "--partition-by", "part",
                    "--property", "delta.enableChangeDataFeed=true",
                    "--property", "delta.enableDeletionVectors=true"]),
        ("append", ["--source", second, "--format", "parquet"]),
        ("update", ["--condition", "id % 3 = 0", "--set", "amount=amount * 10"]),
        ("delete", ["--condition", "id % 5 = 0"]),
        ("merge", ["--source", changes, "--source-format", "parquet", "--on", "t.id = s.id",
                   "--clauses", clauses, "--target-alias", "t", "--source-alias", "s"]),
        ("optimize", []),
        ("checkpoint", []),
        ("vacuum", ["--retention-hours", "0", "--no-retention-check"]),
    ]  # fmt: skip
    for operation, options in steps:
        results = {}
        for mode, uri in tables.items():
            argv = [operation, uri, *options, "--io", mode]
            results[mode] = InProcessCommand(argv, remote=s3a_server.url, storage_options=bucket.storage_options).run()
        hadoop, arrow = results["hadoop"], results["arrow"]
        assert (hadoop["version"], hadoop["operation"]) == (arrow["version"], arrow["operation"]), operation
        if operation != "checkpoint":
            assert _shape(bucket, tables["hadoop"], hadoop["version"]) == _shape(
                bucket, tables["arrow"], arrow["version"]
            )
        assert _rows(bucket, tables["hadoop"]) == _rows(bucket, tables["arrow"]), operation
        if operation in ("append", "update", "merge", "optimize"):
            assert _writers(bucket, tables["hadoop"]) == {SPARK_WRITER}, operation
            assert _writers(bucket, tables["arrow"]) == {ARROW_WRITER}, operation
        if operation == "checkpoint":
            for uri in tables.values():
                assert DeltaTable(uri, bucket.storage_options).log_store.exists(
                    f"{hadoop['version']:020d}.checkpoint.parquet"
                )
            # CHANGES before VACUUM, which removes the change files no longer referenced.
            for mode, uri in tables.items():
                argv = [
                    "changes",
                    uri,
                    "--start",
                    "1",
                    "--output",
                    outputs[mode],
                    "--output-format",
                    "parquet",
                    "--io",
                    mode,
                ]
                InProcessCommand(argv, remote=s3a_server.url, storage_options=bucket.storage_options).run()
            changed = _changes(bucket, outputs["hadoop"])
            assert changed == _changes(bucket, outputs["arrow"])
            kinds = {dict(row)["_change_type"] for row in changed}
            assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
    # 0..59 less the 12 deleted (id % 5 = 0), then 8 updated and 12 inserted (50, 55, 60..69) by the merge.
    assert len(_rows(bucket, tables["hadoop"])) == 60


def test_auto_picks_hadoop_and_only_the_bucket_settings_reach_moto(s3a_server, bucket, moto_server):
    """``io=auto`` asks the server's Spark for an ``s3a`` FileSystem: with
    hadoop-aws there it is ``hadoop`` (without it, ``arrow``: see test_io_mode).
    The same object in a bucket without settings cannot be read: S3A's
    global settings lead nowhere, so the bucket's own are what reach moto."""
    data = _orders(range(3))
    other = s3_backend(moto_server)
    for backend in (bucket, other):
        _put_parquet(backend, "probe/data.parquet", data)
    with connect_mode():
        session = connect_session(s3a_server.url)
        try:
            assert resolve_io(session, f"s3a://{bucket.bucket}/anything", "auto") == "hadoop"
            assert resolve_io(session, f"s3://{bucket.bucket}/anything", "auto") == "hadoop"
            assert session.read.parquet(f"s3a://{bucket.bucket}/probe/data.parquet").count() == 3
            with pytest.raises(Exception, match=r"127\.0\.0\.1:9\b|[Cc]onnection refused"):
                session.read.parquet(f"s3a://{other.bucket}/probe/data.parquet").count()
        finally:
            close(session)


# --- real spark-submits of the CLI, with --jars ---------------------------------------


@pytest.fixture
def submitted(bucket, s3a_server, monkeypatch):
    """A new table in the bucket (made over the S3A server), and every
    spark-submit command line the hook runs after that."""
    name = uuid.uuid4().hex[:8]
    uri = f"s3a://{bucket.bucket}/submit-{name}/orders"
    source = _put_parquet(bucket, f"src/submit-{name}.parquet", _orders(range(0, 12)))
    argv = ["append", uri, "--source", source, "--format", "parquet", "--partition-by", "part", "--io", "hadoop"]
    InProcessCommand(argv, remote=s3a_server.url, storage_options=bucket.storage_options).run()
    seen: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(args, *a, **kw):
        seen.append([str(x) for x in args])
        return real_popen(args, *a, **kw)

    monkeypatch.setattr("airflow.providers.apache.spark.hooks.spark_submit.subprocess.Popen", spy)
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    return uri, seen


def _hook(**kwargs):
    from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook

    return DeltaSparkHook(jars=",".join(jars("hadoop-aws")), conf={**SPARK_TEST_CONF, **S3A_GUARDS}, **kwargs)


def _assert_no_secret(secret: str, seen: list[list[str]], capfd) -> None:
    out, err = capfd.readouterr()
    assert seen and all("--jars" in argv for argv in seen)
    assert not [argv for argv in seen if any(secret in arg for arg in argv)], "secret on a command line"
    assert "Spark-Submit cmd" in out + err, "the logs were not captured"
    assert secret not in out + err, "secret in the logs"


def test_spark_submit_with_a_storage_connection_and_io_auto(submitted, bucket, monkeypatch, capfd):
    """The credentials live only in an Airflow ``aws`` connection; the hook
    hands them to the driver's environment, the driver turns them into S3A's
    per-bucket settings, and ``io=auto`` picks hadoop: Spark wrote the new files."""
    uri, seen = submitted
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}",
        json.dumps(
            {
                "conn_type": "aws",
                "login": bucket.storage_options["AWS_ACCESS_KEY_ID"],
                "password": bucket.secret,
                "extra": {"endpoint_url": bucket.endpoint, "region_name": "us-east-1"},
            }
        ),
    )
    before = _rows(bucket, uri)
    # --debug: every line of spark-submit's output is logged, the command too; none may hold the secret.
    arguments = ["--condition", "part = 'p1'", "--set", "amount=-amount", "--debug"]
    result = _hook(storage_conn_id=CONN_ID).run("update", uri, arguments)
    assert (result["version"], result["operation"], result["metrics"]["numUpdatedRows"]) == (1, "UPDATE", 4)
    assert _rows(bucket, uri) == sorted((i, p, -a if p == "p1" else a, n) for i, p, a, n in before)
    assert _writers(bucket, uri) == {SPARK_WRITER}
    _assert_no_secret(bucket.secret, seen, capfd)


def test_spark_submit_with_credentials_from_the_environment(submitted, bucket, monkeypatch, capfd):
    """The store variables are in the environment (no connection): the driver
    maps them to S3A's per-bucket settings for ``io=hadoop``."""
    uri, seen = submitted
    for key, value in bucket.env.items():
        monkeypatch.setenv(key, value)
    result = _hook().run("delete", uri, ["--condition", "id >= 6", "--io", "hadoop", "--debug"])
    assert (result["version"], result["operation"], result["metrics"]["numDeletedRows"]) == (1, "DELETE", 6)
    assert [r[0] for r in _rows(bucket, uri)] == list(range(6))
    _assert_no_secret(bucket.secret, seen, capfd)


def test_spark_submit_deletes_from_a_clone_whose_files_are_in_another_bucket(
    submitted, bucket, moto_server, monkeypatch, capfd
):
    """A shallow clone in a second bucket names the first bucket's files by
    ``s3a://`` URI: the driver gives S3A the settings of both buckets (the
    guards make any other route fail), Spark reads the source's files and
    writes the clone's own, and the source does not change."""
    from tests.delta.conftest import read_snapshot
    from tests.operations.runs import run_clone

    source, seen = submitted
    other = s3_backend(moto_server)
    clone = f"s3a://{other.bucket}/clone/orders"
    run_clone(None, clone, source, storage_options=bucket.storage_options)
    for key, value in bucket.env.items():
        monkeypatch.setenv(key, value)
    result = _hook().run("delete", clone, ["--condition", "id >= 6", "--io", "hadoop", "--debug"])
    assert (result["version"], result["operation"], result["metrics"]["numDeletedRows"]) == (1, "DELETE", 6)
    clone_rows = read_snapshot(DeltaTable(clone, other.storage_options).snapshot())
    assert sorted(clone_rows.column("id").to_pylist()) == list(range(6))
    assert [r[0] for r in _rows(bucket, source)] == list(range(12))
    written = [f.path for f in DeltaTable(clone, other.storage_options).snapshot().files if "://" not in f.path]
    assert written, "the rewritten files are the clone's own"
    _assert_no_secret(bucket.secret, seen, capfd)


def test_timestamp_partitions_and_their_clone_through_s3a(s3a_server, bucket):
    """Hive escapes ':' in a partition folder (``%3A``), which the log encodes
    again (``%253A``). In hadoop mode Spark's S3A finds the real keys: a
    DELETE reads the table's files, a DELETE on its clone (absolute
    ``s3a://`` adds, the scheme the source was named with) reads the source's,
    and RESTORE on the clone finds the files it re-adds present."""
    from tests.delta.conftest import read_snapshot

    name = uuid.uuid4().hex[:8]
    ids = range(6)
    data = pa.table({"id": pa.array(ids, pa.int64()), "ts": ["2024-01-01 10:00:00" if i % 2 else "a b:c" for i in ids]})
    source = _put_parquet(bucket, f"src/ts-{name}.parquet", data)
    table = f"s3a://{bucket.bucket}/ts-{name}/src"
    clone = f"s3a://{bucket.bucket}/ts-{name}/clone"

    def run(*argv: str) -> dict[str, Any]:
        return InProcessCommand(list(argv), remote=s3a_server.url, storage_options=bucket.storage_options).run()

    def ids_of(uri: str) -> list[int]:
        return sorted(read_snapshot(DeltaTable(uri, bucket.storage_options).snapshot()).column("id").to_pylist())

    run("append", table, "--source", source, "--format", "parquet", "--partition-by", "ts", "--io", "hadoop")
    files = DeltaTable(table, bucket.storage_options).snapshot().files
    assert any("10%253A00%253A00" in f.path for f in files)
    run("delete", table, "--condition", "id = 0", "--io", "hadoop")  # rewrites a file it read through S3A
    assert ids_of(table) == [1, 2, 3, 4, 5]

    run("clone", clone, "--source", table)
    adds = DeltaTable(clone, bucket.storage_options).snapshot().files
    assert all(f.path.startswith(f"s3a://{bucket.bucket}/ts-{name}/src/ts=") for f in adds)
    run("delete", clone, "--condition", "id = 1", "--io", "hadoop")  # reads the source's files
    assert ids_of(clone) == [2, 3, 4, 5] and ids_of(table) == [1, 2, 3, 4, 5]
    restored = run("restore", clone, "--version", "0")
    assert restored["operation"] == "RESTORE" and ids_of(clone) == [1, 2, 3, 4, 5]
