"""``arrow`` I/O against ``hadoop`` I/O on local tables: the same rows, the same commits.

Each case runs one operation twice, on two copies of one table, once per
mode, and compares the tables (read back by delta-rs) and the commits
(everything but file names, sizes and times). The files themselves are
compared too: arrow-written parquet has Spark's physical layout.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from airflow_delta_provider.delta.errors import InvariantViolationError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.cli import build_parser, main
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.merge.command import run_merge
from airflow_delta_provider.spark.commands.update import run_update
from airflow_delta_provider.spark.read.arrow_source import arrow_read, plan_splits
from airflow_delta_provider.spark.read.file_reads import read_files
from airflow_delta_provider.spark.read.files import table_location
from airflow_delta_provider.spark.read.scan import FILE_COLUMN, count_matches, scan
from airflow_delta_provider.spark.runtime.worker_env import forward_store_env

from .arrow_support import arrow_workers, commit_shape  # noqa: F401 - the fixture
from .commands.dml_support import (
    SHADOWING_KINDS,
    SHADOWING_LAYOUTS,
    commit_actions,
    deltalake_table,
    rows_deltalake,
    shadowing_condition,
    shadowing_table_in_layout,
    state,
    twin,
)
from .conftest import table_rows

pytestmark = pytest.mark.usefixtures("arrow_workers")


def _both(tmp_path, src, run):
    """Run ``run(path, io)`` on two copies of ``src``; both tables' paths."""
    hadoop, arrow = twin(src, tmp_path)
    run(hadoop, "hadoop")
    run(arrow, "arrow")
    return hadoop, arrow


def _assert_same_change(hadoop: str, arrow: str) -> None:
    assert rows_deltalake(arrow) == rows_deltalake(hadoop)
    assert commit_shape(arrow) == commit_shape(hadoop)
    assert _file_layouts(arrow) == _file_layouts(hadoop)
    assert not [n for n in os.listdir(arrow) if n.startswith("_delta_staging_")]


def _file_layouts(path: str) -> set[str]:
    """The parquet schemas (physical and logical types) of the files the last
    commit added, without the root's name (Spark's ``spark_schema``, pyarrow's ``schema``)."""
    adds = [a["add"]["path"] for a in commit_actions(path) if "add" in a]
    return {str(pq.ParquetFile(os.path.join(path, unquote(p))).schema).split("\n", 2)[2] for p in adds}


# --- UPDATE and DELETE --------------------------------------------------------------


@pytest.mark.parametrize(
    "partition_by, condition, assignments",
    [
        (None, "id % 3 = 0", {"val": "val * 2"}),
        (["part"], "id % 3 = 0", {"val": "val * 2", "name": "upper(name)"}),
        (["part"], "part = 'a'", {"name": "'x'"}),  # decided by partition values
        (["part"], None, {"val": "0"}),
        (["part"], "id < 10", {"part": "'c'"}),  # rows move to a new partition
        (["part"], "id > 1000", {"val": "0"}),  # nothing matches: no commit
    ],
    ids=["data", "partitioned-data", "partition-only", "all-rows", "moves-rows", "no-match"],
)
def test_update_is_the_same_in_both_modes(tmp_path, spark, partition_by, condition, assignments):
    src = deltalake_table(tmp_path / "src", partition_by=partition_by)
    hadoop, arrow = _both(tmp_path, src, lambda p, io: run_update(spark, p, condition, assignments, io=io))
    _assert_same_change(hadoop, arrow)


def test_update_through_the_file_join_plan_is_the_same(tmp_path, spark, monkeypatch):
    """Many partitions: hadoop joins rows to their files; arrow reads them with their values."""
    from airflow_delta_provider.spark.read import scan as scan_module

    monkeypatch.setattr(scan_module, "MAX_LITERAL_PARTITIONS", 1)
    src = deltalake_table(tmp_path / "src", partition_by=["part"])
    hadoop, arrow = _both(
        tmp_path, src, lambda p, io: run_update(spark, p, "id % 3 = 0 OR part = 'b'", {"val": "-val"}, io=io)
    )
    _assert_same_change(hadoop, arrow)


@pytest.mark.parametrize(
    "partition_by, condition",
    [
        (None, "id > 40"),
        (["part"], "name IS NULL"),
        (["part"], "part = 'b'"),  # whole files, nothing written
        (["part"], "id >= 0"),  # every row
    ],
    ids=["data", "partitioned-data", "partition-only", "all-rows"],
)
def test_delete_is_the_same_in_both_modes(tmp_path, spark, partition_by, condition):
    src = deltalake_table(tmp_path / "src", partition_by=partition_by)
    hadoop, arrow = _both(tmp_path, src, lambda p, io: run_delete(spark, p, condition, io=io))
    _assert_same_change(hadoop, arrow)


@pytest.mark.parametrize("partition_by", [None, ["part"]], ids=["unpartitioned", "partitioned"])
def test_merge_is_the_same_in_both_modes(tmp_path, spark, partition_by):
    from .commands.test_merge import CASES, ON, source_rows, write_source

    src = deltalake_table(tmp_path / "src", partition_by=partition_by)
    source = write_source(tmp_path, source_rows([3, 4, 17, 40, 41, 60, 61, 62]))
    clauses = CASES["conditional-all-three"]
    hadoop, arrow = _both(tmp_path, src, lambda p, io: run_merge(spark, p, source, ON, clauses, io=io))
    _assert_same_change(hadoop, arrow)


def _rich(n: int = 40) -> pa.Table:
    """Every type a data file holds, nested ones included, and a timestamp partition."""
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "b": pa.array([None if i % 5 == 0 else i % 2 == 0 for i in range(n)]),
            "i8": pa.array([i % 100 for i in range(n)], pa.int8()),
            "i16": pa.array([i * 7 for i in range(n)], pa.int16()),
            "f": pa.array([i * 0.5 for i in range(n)], pa.float32()),
            "d": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "big": pa.array([decimal.Decimal(i) * 10**20 for i in range(n)], pa.decimal128(30, 0)),
            "day": pa.array([dt.date(2020, 1, 1 + i % 28) for i in range(n)]),
            "ts": pa.array(
                [None if i % 9 == 0 else dt.datetime(2020, 1, 1, 0, 0, i % 60, 123456) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "text": pa.array(["é" * (i % 40) + "z" for i in range(n)]),
            "bin": pa.array([bytes([i]) for i in range(n)]),
            "arr": pa.array([[i, None] if i % 3 else None for i in range(n)], pa.list_(pa.int32())),
            "m": pa.array([[("k", i)] if i % 4 else [] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "s": pa.array(
                [None if i % 6 == 0 else {"x": i, "y": [str(i)]} for i in range(n)],
                pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))]),
            ),
            "p": pa.array([dt.datetime(2021, 1, 1, i % 2) for i in range(n)], pa.timestamp("us", tz="UTC")),
        }
    )


def test_every_type_is_rewritten_alike(tmp_path, spark):
    from deltalake import write_deltalake

    src = tmp_path / "src"
    for chunk in (_rich().slice(0, 20), _rich().slice(20)):
        write_deltalake(str(src), chunk, partition_by=["p"], mode="append")
    hadoop, arrow = _both(tmp_path, src, lambda p, io: run_update(spark, p, "id % 2 = 0", {"id": "id + 100"}, io=io))
    _assert_same_change(hadoop, arrow)


# --- APPEND --------------------------------------------------------------------------


def _source(tmp_path, table: pa.Table, name: str = "src", files: int = 1) -> str:
    folder = tmp_path / name
    folder.mkdir()
    step = -(-table.num_rows // files)
    for i in range(files):
        pq.write_table(table.slice(i * step, step), str(folder / f"part-{i}.parquet"))
    return str(folder)


def _append_twice(tmp_path, spark, existing, source, **kwargs):
    """The append into fresh tables (``existing``: a table to copy first, or None)."""
    hadoop, arrow = str(tmp_path / "hadoop"), str(tmp_path / "arrow")
    if existing is not None:
        hadoop, arrow = twin(existing, tmp_path)
    run_append(spark, hadoop, source, "parquet", io="hadoop", **kwargs)
    run_append(spark, arrow, source, "parquet", io="arrow", **kwargs)
    return hadoop, arrow


def test_append_creating_a_partitioned_table(tmp_path, spark):
    data = pa.table({"id": list(range(30)), "p": [f"v{i % 4}" if i % 7 else None for i in range(30)]})
    hadoop, arrow = _append_twice(tmp_path, spark, None, _source(tmp_path, data, files=3), partition_by=["p"])
    _assert_same_change(hadoop, arrow)
    assert commit_shape(arrow)["parameters"]["partitionBy"] == '["p"]'


@pytest.mark.parametrize(
    "mode, merge_schema, data",
    [
        ("append", False, pa.table({"id": pa.array([100, 101], pa.int64()), "part": ["a", "z"]})),
        ("overwrite", False, pa.table({"id": pa.array([7], pa.int64()), "part": ["q"], "val": [1.0]})),
        ("append", True, pa.table({"id": pa.array([5], pa.int64()), "part": ["a"], "extra": [[1, 2]]})),
    ],
    ids=["append", "overwrite", "merge-schema"],
)
def test_append_modes(tmp_path, spark, mode, merge_schema, data):
    existing = deltalake_table(tmp_path / "existing", partition_by=["part"])
    hadoop, arrow = _append_twice(tmp_path, spark, existing, _source(tmp_path, data), mode=mode, merge_schema=merge_schema)
    _assert_same_change(hadoop, arrow)


def test_not_null_violation_writes_nothing(tmp_path, spark):
    from deltalake import write_deltalake

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1], "p": ["a"]}, schema=schema), partition_by=["p"])
    before = state(path)
    rows = pa.table({"id": [*range(1, 40), None], "p": [f"v{i % 3}" for i in range(40)]})
    with pytest.raises(InvariantViolationError, match="id"):
        run_append(spark, path, _source(tmp_path, rows, files=4), "parquet", io="arrow")
    assert state(path) == before
    assert table_rows(path) == [(1, "a")]


def test_files_of_finished_tasks_go_when_the_job_fails(tmp_path, spark, monkeypatch):
    """Task 0 writes its file and ends; task 1 then meets a null (late: a
    UDF holds it back). The file of task 0 is found by its marker and deleted."""
    from airflow_delta_provider.spark.write import arrow_writer as arrow_write
    from airflow_delta_provider.spark.write.files import write_files

    marked = []
    real_discard = arrow_write._discard

    def spy(storage, staging, keep):
        marked.extend(m.path for m in storage.list_tree(staging) if not m.is_dir)
        return real_discard(storage, staging, keep)

    monkeypatch.setattr(arrow_write, "_discard", spy)

    def late(value):
        if value is None:
            __import__("time").sleep(5)  # long after task 0 has written its file
        return value

    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    frame = spark.createDataFrame([(i,) for i in range(99)] + [(None,)], "id long")
    assert frame.rdd.getNumPartitions() == 2
    frame = frame.select(F.udf(late, "long")("id").alias("id"))
    path = tmp_path / "t"
    path.mkdir()
    with pytest.raises(InvariantViolationError, match="id"):
        write_files(frame, str(path), schema, [], io="arrow")
    assert len(marked) == 1 and marked[0].endswith(".c000.snappy.parquet")
    assert os.listdir(path) == []


# --- scans ---------------------------------------------------------------------------

GOLDEN = [
    "data-reader-partition-values",
    "data-reader-escaped-chars",
    "data-reader-primitives",
    "data-reader-nested-struct",
    "kernel-timestamp-partition-col-ISO8601",
    "time-travel-schema-changes-b",
    "decimal-various-scale-precision",
]


@pytest.mark.parametrize("name", GOLDEN)
@pytest.mark.parametrize("with_file_path", [False, True])
def test_golden_scans_are_the_same(spark, golden_dir, name, with_file_path):
    snap = DeltaTable(str(golden_dir / name)).snapshot()
    columns = [f["name"] for f in snap.schema["fields"]] + ([FILE_COLUMN] if with_file_path else [])
    frames = [scan(spark, snap, with_file_path=with_file_path, io=io) for io in ("hadoop", "arrow")]
    assert frames[0].schema == frames[1].schema
    rows = [sorted((tuple(r) for r in df.select(*columns).collect()), key=repr) for df in frames]
    assert rows[1] == rows[0]


@pytest.mark.parametrize("condition", [None, "id % 4 = 1", "part = 'a' AND val > 10", "name IS NULL"])
def test_count_matches_is_the_same(tmp_path, spark, condition):
    path = deltalake_table(tmp_path / "t", partition_by=["part"], batches=4)
    snap = DeltaTable(path).snapshot()
    cond = None if condition is None else F.expr(condition)
    counts = [count_matches(spark, snap, snap.files, cond, io=io) for io in ("hadoop", "arrow")]
    assert counts[1] == counts[0] and counts[0]


@pytest.mark.parametrize("layout", list(SHADOWING_LAYOUTS))
@pytest.mark.parametrize("kind", list(SHADOWING_KINDS))
def test_columns_named_like_helpers_read_alike(tmp_path, spark, monkeypatch, layout, kind):
    """Tables with ``_metadata``, ``_file`` or ``__delta_file_*`` data columns."""
    path = shadowing_table_in_layout(tmp_path / "t", monkeypatch, layout, kind)
    snap = DeltaTable(path).snapshot()
    cond = F.expr(shadowing_condition(kind))
    counts = [count_matches(spark, snap, snap.files, cond, io=io) for io in ("hadoop", "arrow")]
    assert counts[1] == counts[0] and counts[0]
    rows = [sorted(map(tuple, scan(spark, snap, io=io).collect()), key=repr) for io in ("hadoop", "arrow")]
    assert rows[1] == rows[0]


def test_input_partitions_follow_sparks_rule(tmp_path, spark):
    """The same tasks as Spark's parquet reader, large files cut by row group."""
    import numpy as np

    folder = tmp_path / "files"
    folder.mkdir()
    sizes = [(2_000, 50), (40_000, 2_000), (300, 300), (40_000, 2_000)]
    for i, (rows, group) in enumerate(sizes):
        data = pa.table({"id": np.arange(i * 100_000, i * 100_000 + rows), "v": np.random.default_rng(i).random(rows)})
        pq.write_table(data, str(folder / f"f{i}.parquet"), row_group_size=group)
    paths = [str(folder / f"f{i}.parquet") for i in range(len(sizes))]
    snapshot_like = _folder_as_table(tmp_path, paths)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "64k")
    spark.conf.set("spark.sql.files.openCostInBytes", "8k")
    try:
        ours = arrow_read(
            spark, table_location(snapshot_like), snapshot_like.schema, [], snapshot_like.files
        ).withColumn("task", F.spark_partition_id())
        theirs = read_files(spark, ours.drop("task").schema, paths).withColumn("task", F.spark_partition_id())
        assert ours.rdd.getNumPartitions() == theirs.rdd.getNumPartitions() > len(sizes)
        assert sorted(ours.select("task", "id").collect()) == sorted(theirs.select("task", "id").collect())
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")


def _folder_as_table(tmp_path, paths):
    """A committed table whose files are ``paths`` (added by absolute path, in order)."""
    from airflow_delta_provider.delta.actions.model import AddFile, Metadata
    from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
    from airflow_delta_provider.delta.schema.types import schema_string

    table = DeltaTable(str(tmp_path / "table"))
    schema = from_arrow_schema(pq.read_schema(paths[0]), metadata=False)
    txn = table.transaction("WRITE", {"mode": "Append"}, None)
    txn.update_metadata(Metadata.new(schema_string(schema), [], created_time=0))
    txn.add_all([AddFile(p, {}, os.path.getsize(p), 0) for p in paths])
    txn.commit()
    snap = table.snapshot()
    by_path = {f.path: f for f in snap.files}
    snap.__dict__["files"] = [by_path[p] for p in paths]  # in the order Spark is given them
    return snap


def test_plan_splits_packs_largest_first():
    assert plan_splits([], 2) == []
    # total 3 * (10 + 4) = 42 -> 21 per core -> split 21: 10+4 fits, then 10 > 21 - 14.
    assert plan_splits([10, 10, 10], 2, max_partition_bytes=100, open_cost=4) == [[[0, 0, None]], [[1, 0, None]], [[2, 0, None]]]
    # One file above the split size is cut into pieces, largest first.
    assert plan_splits([25, 1], 1, max_partition_bytes=10, open_cost=0) == [
        [[0, 0, 10]], [[0, 10, 10]], [[0, 20, 5], [1, 0, None]]
    ]


# --- modes, credentials, CLI ------------------------------------------------------------


def test_store_variables_reach_workers_and_never_the_plan(spark, tmp_path, monkeypatch):
    secret = "sekrit-" + os.urandom(4).hex()

    def worker_env(name):
        sc = spark.sparkContext
        return sc.parallelize([0], 1).map(lambda _: __import__("os").environ.get(name)).collect()[0]

    sc = spark.sparkContext
    monkeypatch.setitem(sc.environment, "AWS_REGION", "from-conf")  # as spark.executorEnv.AWS_REGION
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_REGION", "from-driver")
    path = deltalake_table(tmp_path / "t")
    df = scan(spark, DeltaTable(path).snapshot(), io="arrow")
    assert df.count() == 60
    assert worker_env("AWS_SECRET_ACCESS_KEY") == secret
    assert worker_env("AWS_REGION") == "from-conf"  # configuration wins
    plan = df._jdf.queryExecution().toString()
    assert secret not in plan and secret not in str(spark.sparkContext.getConf().getAll())
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    forward_store_env(spark)
    assert worker_env("AWS_SECRET_ACCESS_KEY") is None  # no stale credentials
    assert "AWS_SECRET_ACCESS_KEY" not in sc.environment


def test_cli_passes_io(spark, tmp_path, capsys):
    parser = build_parser()
    for command in (["update", "t", "--set", "a=1"], ["delete", "t", "--condition", "x"], ["vacuum", "t"]):
        assert parser.parse_args([*command, "--io", "arrow"]).io == "arrow"
        assert parser.parse_args(command).io == "auto"
    path = deltalake_table(tmp_path / "t")
    code = main(["delete", path, "--condition", "id < 5", "--io", "arrow"], session_factory=lambda conf: spark)
    assert code == 0 and len(rows_deltalake(path)) == 55
    with pytest.raises(SystemExit) as exit_info:
        main(["delete", path, "--condition", "id < 5", "--io", "fast"], session_factory=lambda conf: spark)
    assert exit_info.value.code == 2
