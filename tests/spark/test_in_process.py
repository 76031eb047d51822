"""Commands run in this process: over a real Spark Connect server, and with no Spark.

Every command runs twice on twin tables, once on the test session's classic
SparkSession (what spark-submit runs) and once over Spark Connect; the
versions, the operations, the row counts of the metrics and the rows
(read by delta-rs) must be the same. Bad input, an unreachable or killed
server and an interrupt must leave the table as it was.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import EngineUnavailableError, InvalidInputError, OperationInterruptedError
from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
from airflow_delta_provider.spark.cli import SPARK_ERROR_LOGGERS, build_parser, execute
from airflow_delta_provider.spark.in_process import InProcessCommand
from airflow_delta_provider.spark.runtime.remote_session import CONNECT_MODE_VARIABLE, redact_url
from tests.operations.dml.dml_support import rows_rs, state
from tests.spark_connect_server import wait_until
from tests.storage_servers import free_port

#: Metrics that count rows or files: equal whichever engine ran the command.
COUNTED = (
    "numUpdatedRows",
    "numDeletedRows",
    "numCopiedRows",
    "numOutputRows",
    "numFiles",
    "numAddedFiles",
    "numRemovedFiles",
    "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved",
    "numPurgedRows",
    "numDeletedFiles",
    "numAddFiles",
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsCopied",
    "numTargetFilesRemoved",
)

#: A condition that holds for every row and takes 20 ms a row: a slow operation.
SLOW = "id >= 0 AND java_method('java.lang.Thread', 'sleep', cast(20 as bigint)) = 'null'"


@pytest.fixture(autouse=True)
def arrow_workers(spark, monkeypatch):
    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)


def _source(path: Path, ids: range, extra: bool = False) -> str:
    columns = {"id": pa.array(list(ids), pa.int64()), "val": [f"v{i}" for i in ids]}
    if extra:
        columns["note"] = [f"n{i}" for i in ids]
    pq.write_table(pa.table(columns), path)
    return str(path)


def _twins(tmp_path: Path, rows: int = 200) -> tuple[str, str]:
    from deltalake import write_deltalake

    first, second = str(tmp_path / "classic"), str(tmp_path / "connect")
    for part in range(4):  # four files
        ids = range(part * rows // 4, (part + 1) * rows // 4)
        data = pa.table({"id": pa.array(ids, pa.int64()), "val": [f"v{i}" for i in ids]})
        write_deltalake(first, data, mode="append")
    shutil.copytree(first, second)
    return first, second


def _classic(spark, argv: list[str]) -> dict:
    return execute(build_parser().parse_args(argv), spark).to_dict()


def _connect(server, argv: list[str], **kwargs) -> dict:
    return InProcessCommand(argv, remote=server.url, **kwargs).run()


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_every_command_over_connect_does_what_the_classic_session_does(spark, spark_connect, tmp_path, io):
    classic, remote = _twins(tmp_path)
    wider = _source(tmp_path / "wider.parquet", range(1000, 1010), extra=True)
    upserts = _source(tmp_path / "upserts.parquet", range(190, 215))
    reload = _source(tmp_path / "reload.parquet", range(150, 160))
    upsert = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]
    steps = [
        ["append", "{t}", "--source", wider, "--format", "parquet", "--merge-schema",
         "--property", "delta.enableDeletionVectors=true"],
        ["update", "{t}", "--condition", "id % 7 = 0", "--set", "val = upper(val)", "--set", "note = 'seven'"],
        ["delete", "{t}", "--condition", "id BETWEEN 20 AND 60"],
        ["append", "{t}", "--source", reload, "--format", "parquet", "--mode", "overwrite",
         "--replace-where", "id >= 150 AND id < 160"],
        ["merge", "{t}", "--source", upserts, "--on", "t.id = s.id", "--clauses", json.dumps(upsert)],
        ["append", "{t}", "--source-sql", "SELECT id + 5000 AS id, upper(val) AS val FROM before WHERE id < 10",
         "--source-views", json.dumps({"before": {"path": "{t}", "format": "delta", "version": 1}})],
        ["merge", "{t}", "--source-sql", "SELECT id, concat(val, '!') AS val FROM u WHERE id % 2 = 0",
         "--source-views", json.dumps({"u": {"path": upserts, "format": "parquet"}}),
         "--on", "t.id = s.id", "--clauses", json.dumps(upsert)],
        ["reorg", "{t}", "--purge"],
        ["alter", "{t}", "--change", json.dumps({"add_columns": [{"name": "extra", "type": "long"}]})],
        ["update", "{t}", "--condition", "id < 5", "--set", "extra = id * 2"],
        ["checkpoint", "{t}"],
        ["vacuum", "{t}", "--retention-hours", "0", "--no-retention-check"],
    ]  # fmt: skip
    for step in steps:
        expected = _classic(spark, [*[a.replace("{t}", classic) for a in step], "--io", io, "--token", "tok"])
        got = _connect(spark_connect, [*[a.replace("{t}", remote) for a in step], "--io", io, "--token", "tok"])
        assert (got["operation"], got["version"]) == (expected["operation"], expected["version"]), step[0]
        counted = {k: v for k, v in expected["metrics"].items() if k in COUNTED}
        assert {k: got["metrics"].get(k) for k in counted} == counted, step[0]
        assert rows_rs(remote) == rows_rs(classic), step[0]
    assert CONNECT_MODE_VARIABLE not in __import__("os").environ  # the classic session still works after
    assert spark.range(3).count() == 3


@pytest.fixture
def error_records():
    """What PySpark's error loggers emit (each record carries a JVM stack)."""
    import logging

    from pyspark.logger import PySparkLogger

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    loggers = [PySparkLogger.getLogger(name) for name in SPARK_ERROR_LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    yield records
    for logger in loggers:
        logger.removeHandler(handler)


def test_bad_input_over_connect_is_one_clear_line_and_changes_nothing(spark_connect, tmp_path, capfd, error_records):
    _, table = _twins(tmp_path)
    before = state(table)
    with pytest.raises(InvalidInputError, match=r"nosuchcol.*Did you mean one of the following\? \[`id`, `val`\]"):
        _connect(spark_connect, ["update", table, "--condition", "nosuchcol > 3", "--set", "val = 'x'"])
    assert error_records == []
    captured = capfd.readouterr()
    assert "JVM stacktrace" not in captured.err + captured.out
    assert state(table) == before


def test_debug_lets_pysparks_error_records_through(spark_connect, tmp_path, error_records):
    _, table = _twins(tmp_path)
    with pytest.raises(InvalidInputError):
        _connect(spark_connect, ["delete", table, "--condition", "nosuchcol > 3", "--debug"])
    assert [r.name for r in error_records] == ["SQLQueryContextLogger"]
    assert "JVM stacktrace" in error_records[0].getMessage()


def test_server_settings_are_skipped_by_name_and_session_settings_apply(spark_connect, tmp_path, caplog):
    _, table = _twins(tmp_path)
    conf = {"spark.executor.memory": "7g", "spark.sql.files.maxRecordsPerFile": "10"}
    result = _connect(spark_connect, ["update", table, "--set", "val = 'x'"], conf=conf)
    assert "spark.executor.memory" in caplog.text and "ignored" in caplog.text
    # 200 rows rewritten at most 10 to a file: the session setting reached the server.
    assert result["metrics"]["numAddedFiles"] == 20
    with pytest.raises(InvalidInputError, match=r"spark\.sql\.shuffle\.partitions"):
        _connect(spark_connect, ["update", table, "--set", "val = 'y'"], conf={"spark.sql.shuffle.partitions": "x"})


def test_an_unreachable_server_is_engine_unavailable_and_says_where(tmp_path):
    _, table = _twins(tmp_path, rows=8)
    url = f"sc://127.0.0.1:{free_port()}/;token=s3cr3t-token"
    started = time.monotonic()
    with pytest.raises(EngineUnavailableError, match=r"sc://127\.0\.0\.1:\d+") as caught:
        InProcessCommand(["delete", table, "--condition", "id = 1"], remote=url).run()
    assert time.monotonic() - started < 60
    everything = "".join(traceback.format_exception(caught.value))  # the chained causes too
    assert "s3cr3t-token" not in everything
    assert redact_url(url) in str(caught.value)


def _run_in_thread(command: InProcessCommand) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["result"] = command.run()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_interrupt_stops_the_running_operation_and_commits_nothing(spark_connect, tmp_path, io):
    _, table = _twins(tmp_path, rows=400)
    before = state(table)
    command = InProcessCommand(["update", table, "--condition", SLOW, "--set", "val = 'x'", "--io", io],
                               remote=spark_connect.url)  # fmt: skip
    thread, outcome = _run_in_thread(command)
    wait_until(lambda: command._session is not None)
    time.sleep(2.0)  # into the scan: 400 rows take 8 s of sleeps on two cores
    assert thread.is_alive()  # still running: the interrupt is what ends it
    interrupted_at = time.monotonic()
    command.interrupt()
    thread.join(timeout=120)
    assert not thread.is_alive() and time.monotonic() - interrupted_at < 30
    assert isinstance(outcome.get("error"), OperationInterruptedError), outcome
    assert state(table) == before


def test_a_server_killed_mid_operation_fails_clearly_and_changes_nothing(fresh_spark_connect, tmp_path):
    server = fresh_spark_connect()
    _, table = _twins(tmp_path, rows=400)
    before = state(table)
    command = InProcessCommand(["update", table, "--condition", SLOW, "--set", "val = 'x'"], remote=server.url)
    thread, outcome = _run_in_thread(command)
    wait_until(lambda: command._session is not None)
    time.sleep(2.0)
    server.kill()
    thread.join(timeout=120)
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, EngineUnavailableError), outcome
    assert "went away during the update" in str(error) or "cannot reach" in str(error)
    assert state(table) == before


def test_the_python_engine_runs_checkpoint_alter_and_vacuum_without_pyspark(tmp_path):
    """In a fresh interpreter: the three commands run, and pyspark is never imported."""
    _, table = _twins(tmp_path, rows=8)
    code = f"""
import json, sys
from airflow_delta_provider.spark.in_process import InProcessCommand
results = [
    InProcessCommand(["checkpoint", {table!r}]).run(),
    InProcessCommand(["alter", {table!r}, "--change", '{{"set_properties": {{"delta.logRetentionDuration": "interval 2 days"}}}}']).run(),
    InProcessCommand(["vacuum", {table!r}, "--retention-hours", "0", "--no-retention-check", "--token", "v"]).run(),
]
print(json.dumps({{"results": results, "pyspark": sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    parsed = json.loads(out.stdout.strip().splitlines()[-1])
    assert parsed["pyspark"] == []
    checkpoint, alter, vacuum = parsed["results"]
    assert (checkpoint["operation"], checkpoint["version"]) == ("CHECKPOINT", 3)  # four appends: 0-3
    assert json.loads((Path(table) / "_delta_log" / "_last_checkpoint").read_text())["version"] == 3
    assert (alter["operation"], alter["version"]) == ("SET TBLPROPERTIES", 4)
    assert vacuum["operation"] == "VACUUM" and vacuum["version"] == 6  # VACUUM START, VACUUM END


@pytest.mark.parametrize(
    "argv",
    [
        ["update", "/t", "--set", "a = 1"],
        ["delete", "/t", "--condition", "a = 1"],
        ["append", "/t", "--source", "/s", "--format", "parquet"],
        ["reorg", "/t", "--purge"],
    ],
)
def test_commands_that_need_spark_refuse_to_run_without_it(argv):
    assert argv[0] not in PYTHON_ENGINE_OPERATIONS
    with pytest.raises(InvalidInputError, match=f"{argv[0]} needs Spark"):
        InProcessCommand(argv)


def test_bad_input_is_recognised_without_py4j(monkeypatch):
    """A Spark Connect client with ``pyspark-client`` alone has no py4j: a
    Spark error the input caused is still bad input."""
    from pyspark.errors.exceptions.connect import AnalysisException  # what a Connect client raises

    from airflow_delta_provider.spark.cli import spark_input_error
    from airflow_delta_provider.spark.conditions import user_input

    monkeypatch.setitem(sys.modules, "py4j", None)
    monkeypatch.setitem(sys.modules, "py4j.protocol", None)
    error = AnalysisException(
        message="[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column ... with name `nosuchcol` cannot be resolved.",
        errorClass="UNRESOLVED_COLUMN.WITH_SUGGESTION",
        sql_state="42703",
    )
    assert spark_input_error(error) is None  # an analysis error outside the user's SQL: our own bug
    with pytest.raises(AnalysisException) as caught, user_input("condition", "nosuchcol = 1"):
        raise error
    translated = spark_input_error(caught.value)
    assert isinstance(translated, InvalidInputError)
    assert "[UNRESOLVED_COLUMN.WITH_SUGGESTION]" in str(translated) and "nosuchcol" in str(translated)
    assert spark_input_error(RuntimeError("not a Spark error")) is None


def test_an_update_over_connect_on_s3(fresh_spark_connect, s3_bucket, tmp_path, monkeypatch):
    """A table in a moto bucket: the server's executors reach it with the
    server's own credentials (its environment), the task's process with the
    storage options it was given; neither has the other's. ``io=auto`` finds
    no S3 filesystem in the server's Spark and picks arrow."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    from tests.storage_servers import upload_tree

    server = fresh_spark_connect(env=s3_bucket.env)
    for key in s3_bucket.env:
        monkeypatch.delenv(key, raising=False)
    local = str(tmp_path / "local")
    write_deltalake(local, pa.table({"id": pa.array(range(20), pa.int64()), "val": [f"v{i}" for i in range(20)]}))
    uri = s3_bucket.uri("orders")
    upload_tree(local, uri, s3_bucket.storage_options)

    result = InProcessCommand(
        ["update", uri, "--condition", "id < 5", "--set", "val = 'x'", "--token", "s3-update"],
        remote=server.url,
        storage_options=s3_bucket.storage_options,
    ).run()

    assert (result["version"], result["metrics"]["numUpdatedRows"]) == (1, 5)
    read = RsTable(uri, storage_options=s3_bucket.storage_options).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["val"]) for r in read) == [(i, "x" if i < 5 else f"v{i}") for i in range(20)]
    from airflow_delta_provider.delta.storage import open_storage

    names = {m.path for m in open_storage(uri, s3_bucket.storage_options).list_tree("") if not m.is_dir}
    assert not [n for n in names if n.startswith("_delta_staging_")]
