"""Spark end to end on S3 (moto's server) in ``arrow`` mode.

The pip pyspark has no ``hadoop-aws``, so ``io=auto`` picks ``arrow`` for an
``s3://`` table: the executors' Python workers read and write through
obstore. Each test runs one operation on a table in a bucket and the same
operation in ``hadoop`` mode on a local copy, then ``deltalake`` reads the
bucket's table from the same endpoint and must see the local copy's rows;
the two commits must be the same change.

The shared SparkSession started before any bucket existed: the credentials
reach the workers only because the engine forwards the driver's store
variables to them (:mod:`airflow_delta_provider.spark.runtime.worker_env`).
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, InvariantViolationError
from airflow_delta_provider.delta.schema.fields import stats_leaves
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.runtime.io_mode import hadoop_filesystem_available
from airflow_delta_provider.spark.write.files import _publish
from tests.operations.dml.dml_support import _sorted, deltalake_table, rows_deltalake
from tests.operations.runs import run_append, run_delete, run_update
from tests.spark.arrow_support import arrow_workers, commit_shape  # noqa: F401 - the fixture
from tests.storage_servers import upload_tree

pytestmark = pytest.mark.usefixtures("arrow_workers")


@pytest.fixture
def bucket(s3_bucket, spark, monkeypatch):
    """A moto bucket, its credentials in the driver's environment only."""
    if hadoop_filesystem_available(spark, "s3a"):
        pytest.skip("this Spark has hadoop-aws: io=auto would not pick arrow")
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


def remote_rows(bucket, uri: str) -> list[tuple]:
    from deltalake import DeltaTable as RsTable

    return _sorted(RsTable(uri, storage_options=bucket.storage_options).to_pyarrow_table())


def remote_commit(uri: str) -> list[dict]:
    table = DeltaTable(uri)
    raw = table.storage.get(f"_delta_log/{table.latest_version():020d}.json")
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def object_names(uri: str) -> set[str]:
    return {m.path for m in open_storage(uri).list_tree("") if not m.is_dir}


def _same_change(bucket, uri: str, local: str) -> None:
    assert remote_rows(bucket, uri) == rows_deltalake(local)
    assert commit_shape(uri, actions=remote_commit(uri)) == commit_shape(local)
    assert not [n for n in object_names(uri) if n.startswith("_delta_staging_")]


@pytest.fixture
def tables(bucket, tmp_path):
    """(s3 uri, local path) of two copies of one partitioned table."""
    local = deltalake_table(tmp_path / "local", partition_by=["part"])
    uri = bucket.uri("t")
    upload_tree(local, uri)
    return uri, local


def test_update(spark, bucket, tables):
    uri, local = tables
    result = run_update(spark, uri, "id % 3 = 0", {"val": "val * 2", "name": "upper(name)"})
    run_update(spark, local, "id % 3 = 0", {"val": "val * 2", "name": "upper(name)"}, io="hadoop")
    assert result.version == 3 and result.metrics["numUpdatedRows"] == 20
    _same_change(bucket, uri, local)


def test_delete(spark, bucket, tables):
    uri, local = tables
    result = run_delete(spark, uri, "id > 40 OR part = 'b'")
    run_delete(spark, local, "id > 40 OR part = 'b'", io="hadoop")
    assert result.version == 3
    _same_change(bucket, uri, local)


def test_append_with_merge_schema(spark, bucket, tables, tmp_path):
    uri, local = tables
    source = tmp_path / "src"
    source.mkdir()
    data = pa.table({"id": pa.array([100, 101], pa.int64()), "part": ["a", "c"], "extra": [{"k": 1}, None]})
    pq.write_table(data, str(source / "part-0.parquet"))
    result = run_append(spark, uri, str(source), "parquet", merge_schema=True)
    run_append(spark, local, str(source), "parquet", merge_schema=True, io="hadoop")
    assert result.metrics["numOutputRows"] == 2
    assert [f["name"] for f in DeltaTable(uri).snapshot().schema["fields"]][-1] == "extra"
    _same_change(bucket, uri, local)


def test_append_creates_a_table_from_a_parquet_folder_in_the_bucket(spark, bucket, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for i in range(3):
        pq.write_table(
            pa.table({"id": [i * 10 + j for j in range(10)], "p": [f"v{j % 2}" for j in range(10)]}),
            str(source / f"part-{i}.parquet"),
        )
    (source / "_SUCCESS").write_bytes(b"")
    upload_tree(str(source), bucket.uri("src"))
    uri, local = bucket.uri("t"), str(tmp_path / "local")
    run_append(spark, uri, bucket.uri("src"), "parquet", partition_by=["p"])
    run_append(spark, local, str(source), "parquet", partition_by=["p"], io="hadoop")
    _same_change(bucket, uri, local)
    with pytest.raises(InvalidInputError, match=r"csv source .*io=arrow"):
        run_append(spark, uri, bucket.uri("src"), "csv")


def test_not_null_violation_leaves_the_bucket_unchanged(spark, bucket, tmp_path):
    from deltalake import write_deltalake

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
    local = str(tmp_path / "local")
    write_deltalake(local, pa.table({"id": [1], "p": ["a"]}, schema=schema), partition_by=["p"])
    uri = bucket.uri("t")
    upload_tree(local, uri)
    source = tmp_path / "src"
    source.mkdir()
    for i in range(3):
        ids = [None] if i == 2 else [i * 10 + j for j in range(10)]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "p": ["b"] * len(ids)}), str(source / f"{i}.parquet"))
    before = object_names(uri)
    with pytest.raises(InvariantViolationError, match="id"):
        run_append(spark, uri, str(source), "parquet")
    assert object_names(uri) == before


def test_hadoop_mode_is_refused_without_a_connector(spark, bucket, tables):
    uri, _local = tables
    before = object_names(uri)
    with pytest.raises(InvalidInputError, match="s3a://"):
        run_update(spark, uri, "id = 1", {"val": "0"}, io="hadoop")
    assert object_names(uri) == before


def test_hadoop_staging_is_published_through_the_store(spark, bucket, tmp_path):
    """hadoop mode on a store: the files Spark staged are moved, measured and
    cleaned up through the storage layer, as on a local disk."""
    df = spark.createDataFrame([(i, f"v{i % 2}") for i in range(20)], "id long, p string")
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    staged = tmp_path / "staged"
    df.repartition(2).write.partitionBy("p").parquet(str(staged))
    results = {}
    for name, root in (("local", str(tmp_path / "t")), ("s3", bucket.uri("t"))):
        storage = open_storage(root)
        if storage.is_local:
            import shutil

            shutil.copytree(staged, os.path.join(root, "_delta_staging_x"))
        else:
            upload_tree(str(staged), bucket.uri("t/_delta_staging_x"))
        adds = _publish(storage, "_delta_staging_x", ["p"], {"p": "string"}, stats_leaves(schema, ["p"]))
        assert all(storage.exists(a.path) for a in adds)
        assert all(not m.path.endswith(".parquet") for m in storage.list_tree("_delta_staging_x") if not m.is_dir)
        results[name] = sorted((json.dumps(a.partition_values), a.stats, a.size) for a in adds)
    assert results["s3"] == results["local"] and len(results["s3"]) == 4


def test_checkpoint_then_vacuum(spark, bucket, tables):
    """CHECKPOINT and VACUUM on the bucket's copy do what they do on the local
    copy: the same checkpointed version, the same files deleted, the same
    rows for deltalake (which reads the bucket's table from the checkpoint)."""
    from tests.operations.runs import run_checkpoint, run_vacuum

    uri, local = tables
    for root, io in ((uri, "arrow"), (local, "hadoop")):
        run_update(spark, root, "id % 2 = 0", {"val": "val + 1"}, io=io)
    remote = run_checkpoint(spark, uri, cleanup_logs=True)
    here = run_checkpoint(spark, local, cleanup_logs=True)
    assert remote.version == here.version == 3
    # pyarrow and Spark encode the rewritten files differently: sizes differ.
    assert remote.metrics["numAddFiles"] == here.metrics["numAddFiles"]
    names = object_names(uri)
    assert f"_delta_log/{3:020d}.checkpoint.parquet" in names and "_delta_log/_last_checkpoint" in names
    assert remote_rows(bucket, uri) == rows_deltalake(local)

    live = {f.path for f in DeltaTable(uri).snapshot().files}
    planned = run_vacuum(spark, uri, retention_hours=0, dry_run=True, enforce_retention=False)
    remote = run_vacuum(spark, uri, retention_hours=0, enforce_retention=False)
    here = run_vacuum(spark, local, retention_hours=0, enforce_retention=False)
    assert remote.metrics["numDeletedFiles"] == here.metrics["numDeletedFiles"] == len(planned.files) > 0
    data_files = {n for n in object_names(uri) if not n.startswith("_delta_log/")}
    from urllib.parse import unquote

    assert data_files == {unquote(p) for p in live}
    assert remote_rows(bucket, uri) == rows_deltalake(local)
    assert [c["operation"] for c in _history(uri)[:2]] == ["VACUUM END", "VACUUM START"]


def _history(uri: str) -> list[dict]:
    return DeltaTable(uri).history()


def test_bad_input_on_a_bucket_changes_nothing(spark, bucket, tables, tmp_path):
    from airflow_delta_provider.delta.errors import StorageNotFoundError

    uri, _local = tables
    before = object_names(uri)
    with pytest.raises(InvalidInputError, match="nosuchcol"):
        run_update(spark, uri, "nosuchcol > 3", {"val": "0"})
    with pytest.raises(InvalidInputError, match="nosuchcol"):
        run_update(spark, uri, "id > 3", {"nosuchcol": "0"})
    with pytest.raises(InvalidInputError):
        run_delete(spark, uri, "id >>> 3")
    assert object_names(uri) == before

    source = tmp_path / "src"
    source.mkdir()
    pq.write_table(pa.table({"id": [1]}), str(source / "part-0.parquet"))
    missing = f"s3://no-such-{bucket.bucket}/t"
    with pytest.raises(StorageNotFoundError, match=f"bucket 'no-such-{bucket.bucket}' does not exist"):
        run_append(spark, missing, str(source), "parquet")


def test_a_parquet_source_is_listed_with_the_callers_storage_options(spark, s3_bucket, tmp_path, monkeypatch):
    """In a task's own process (Spark Connect), the store's credentials come as
    storage_options, not as environment: the source's listing and schema use them."""
    from airflow_delta_provider.operations.sources.spark import read_source

    for key in s3_bucket.env:
        monkeypatch.delenv(key, raising=False)
    source = tmp_path / "src"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "note": ["a", "b"]}), str(source / "part-0.parquet"))
    upload_tree(str(source), s3_bucket.uri("src"), s3_bucket.storage_options)
    frame = read_source(
        spark, s3_bucket.uri("src"), "parquet", {}, io="arrow", storage_options=s3_bucket.storage_options
    )
    assert frame.schema.names == ["id", "note"]


def test_change_data_feed_in_the_bucket(spark, bucket, tmp_path):
    """UPDATE and DELETE on a change-data-feed table in the bucket write their
    cdc files through the storage layer, and CHANGES writes a range to the
    bucket as parquet: the same rows as on a local copy in ``hadoop`` mode."""
    from deltalake import write_deltalake

    from airflow_delta_provider.spark.read.table_changes import read_changes
    from tests.operations.runs import run_changes

    local = str(tmp_path / "local")
    data = pa.table({"id": pa.array(range(10), pa.int64()), "part": ["a", "b"] * 5})
    write_deltalake(local, data, partition_by=["part"], configuration={"delta.enableChangeDataFeed": "true"})
    uri = bucket.uri("t")
    upload_tree(local, uri)
    for table, io in ((uri, "auto"), (local, "hadoop")):
        run_update(spark, table, "id < 3", {"id": "id + 100"}, io=io)
        run_delete(spark, table, "id = 9", io=io)
    assert any(n.startswith("_change_data/part=") for n in object_names(uri))
    assert remote_rows(bucket, uri) == rows_deltalake(local)

    result = run_changes(spark, uri, 1, None, bucket.uri("out"))
    assert result.metrics["changes"] == {"insert": 0, "delete": 1, "update_preimage": 3, "update_postimage": 3}
    written = [n for n in object_names(bucket.uri("out")) if n.endswith(".parquet")]
    assert written and "_delta_changes.json" in object_names(bucket.uri("out"))
    remote = read_changes(spark, uri, 1).frame.drop("_commit_timestamp")
    here = read_changes(spark, local, 1, io="hadoop").frame.drop("_commit_timestamp")
    assert sorted(map(tuple, remote.collect())) == sorted(map(tuple, here.collect()))
