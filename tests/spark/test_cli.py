"""The CLI: argument parsing, result JSON, one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.cli import build_parser, main
from tests.spark.conftest import disk_files, table_rows


@pytest.fixture(autouse=True)
def _no_progress_lines(monkeypatch):
    """The in-process runs here count stderr's lines; a loaded machine must not add a progress
    line to them. The subprocess runs that test progress lines set their own interval."""
    monkeypatch.setenv("DELTA_PROGRESS_INTERVAL", "0")

ROOT = Path(__file__).resolve().parents[2]


def _source(tmp_path, table):
    folder = tmp_path / "src"
    folder.mkdir(exist_ok=True)
    pq.write_table(table, str(folder / "a.parquet"))
    return str(folder)


def test_parser_reads_every_command():
    p = build_parser()
    a = p.parse_args(["update", "t", "--condition", "id = 1", "--set", "v=v+1", "--set", "w='a=b'", "--token", "k"])
    assert a.set_exprs == [("v", "v+1"), ("w", "'a=b'")] and a.token == "k"
    a = p.parse_args(
        [
            "append",
            "t",
            "--source",
            "s",
            "--format",
            "csv",
            "--partition-by",
            "a",
            "--partition-by",
            "b",
            "--option",
            "header=true",
            "--txn-app-id",
            "x",
            "--txn-version",
            "3",
            "--spark-conf",
            "k=v",
        ]
    )
    assert a.partition_by == ["a", "b"] and a.option == [("header", "true")] and a.txn_version == 3
    assert a.spark_conf == [("k", "v")] and a.mode == "append"
    a = p.parse_args(["vacuum", "t", "--retention-hours", "0", "--dry-run", "--no-retention-check"])
    assert a.retention_hours == 0 and a.dry_run and a.retention_check is False
    assert p.parse_args(["checkpoint", "t", "--cleanup-logs"]).cleanup_logs
    a = p.parse_args(
        [
            "merge",
            "t",
            "--source",
            "s",
            "--source-format",
            "delta",
            "--source-version",
            "4",
            "--on",
            "t.id = s.id",
            "--clauses",
            "[]",
            "--merge-schema",
            "--target-alias",
            "tt",
        ]
    )
    assert (a.source_format, a.source_version, a.on, a.target_alias, a.source_alias) == (
        "delta",
        4,
        "t.id = s.id",
        "tt",
        "s",
    )
    assert a.merge_schema and a.clauses == "[]"
    a = p.parse_args(["changes", "t", "--start", "3", "--output", "/o", "--output-format", "csv"])
    assert (a.start, a.end, a.output, a.output_format) == (3, None, "/o", "csv")


def test_usage_error_is_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["append", "t", "--format", "parquet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("InvalidInputError:")


def test_append_in_process_prints_result_json(spark, tmp_path, capsys):
    path = str(tmp_path / "t")
    code = main(
        ["append", path, "--source", _source(tmp_path, pa.table({"id": [1]})), "--format", "parquet", "--token", "tk"],
        session_factory=lambda conf: spark,
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out == {
        "table": path,
        "operation": "WRITE",
        "version": 0,
        "metrics": {"numFiles": 1, "numOutputRows": 1, "numOutputBytes": out["metrics"]["numOutputBytes"]},
    }


def test_schema_mismatch_in_process_is_one_line_and_changes_nothing(spark, tmp_path, make_table, capsys):
    path = make_table(pa.table({"id": [1]}))
    before = disk_files(path)
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["append", path, "--source", _source(tmp_path, pa.table({"other": [1]})), "--format", "parquet"],
            session_factory=lambda conf: spark,
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("SchemaMismatchError:")
    assert disk_files(path) == before


def _run(*args, python_options=0):
    """The Spark CLI in a new process; the first ``python_options`` of ``args`` go to Python."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args[:python_options], "-m", "airflow_delta_provider.spark", *args[python_options:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_merge_with_a_multiple_match_is_one_line_and_changes_nothing(spark, tmp_path, make_table, capsys):
    path = make_table(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    before = disk_files(path)
    source = _source(tmp_path, pa.table({"id": [2, 2], "v": ["x", "y"]}))
    clauses = json.dumps([{"when": "matched", "update": "*"}])
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["merge", path, "--source", source, "--on", "t.id = s.id", "--clauses", clauses],
            session_factory=lambda conf: spark,
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("MultipleSourceMatchesError:") and "id=2" in err[0]
    assert disk_files(path) == before


def test_subprocess_append_then_bad_input(tmp_path):
    """End to end in a fresh process (one JVM each)."""
    path = str(tmp_path / "t")
    src = _source(tmp_path, pa.table({"id": [1, 2], "p": ["a", "b"]}))
    ok = _run(
        "append",
        path,
        "--source",
        src,
        "--format",
        "parquet",
        "--partition-by",
        "p",
        "--spark-conf",
        "spark.sql.shuffle.partitions=2",
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads(ok.stdout.strip().splitlines()[-1])["version"] == 0
    assert table_rows(path) == [(1, "a"), (2, "b")]

    bad = _run("append", path, "--source", str(tmp_path / "missing"), "--format", "parquet")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("SourceNotFoundError:")
    assert DeltaTable(path).latest_version() == 0


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["update", "{tmp}/ordres", "--set", "status='x'"], "TableNotFoundError: {tmp}/ordres is not a Delta table"),
        (
            ["update", "{table}", "--condition", "statuss = 'a'", "--set", "status='x'"],
            "UnresolvedColumnError: invalid condition \"statuss = 'a'\": [UNRESOLVED_COLUMN.WITH_SUGGESTION] A "
            "column, variable, or function parameter with name `statuss` cannot be resolved. Did you mean one of the "
            "following? [`status`, `id`].",
        ),
        (
            ["append", "{table}", "--source", "{tmp}/landing", "--format", "parquet"],
            "SourceNotFoundError: the source path {tmp}/landing does not exist",
        ),
    ],
)
def test_subprocess_bad_input_fails_before_spark_is_imported(tmp_path, make_table, args, line):
    """One stderr line, exit code 2, nothing on stdout, and no JVM: pyspark is never even imported.
    (Every other bad input goes through the same pre-flight: tests/hooks/test_delta_operation.py.)"""
    table = make_table(pa.table({"id": [1, 2], "status": ["a", "b"]}))
    before = disk_files(str(tmp_path))
    names = {"tmp": str(tmp_path), "table": table}
    done = _run("-X", "importtime", *[a.format(**names) for a in args], python_options=2)
    imported = [x for x in done.stderr.splitlines() if x.startswith("import time:")]
    err = [x for x in done.stderr.splitlines() if not x.startswith("import time:")]
    assert (done.returncode, done.stdout, len(err)) == (2, "", 1), done.stderr[-2000:]
    assert err[0].startswith(line.format(**names)), err[0]
    assert imported and not [x for x in imported if x.rsplit("|", 1)[-1].strip().startswith("pyspark")]
    assert disk_files(str(tmp_path)) == before


def test_subprocess_checkpoint_needs_no_spark(make_table):
    path = make_table(pa.table({"id": [1]}))
    done = _run("checkpoint", path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["operation"] == "CHECKPOINT"
    missing = _run("checkpoint", path + "-nope")
    assert missing.returncode == 2 and missing.stderr.strip().startswith("TableNotFoundError:")
    assert len(missing.stderr.strip().splitlines()) == 1


def test_alter_needs_no_spark_and_refuses_bad_changes_in_one_line(make_table, capsys):
    path = make_table(pa.table({"id": [1], "v": ["a"]}))

    def no_session(conf):
        raise AssertionError("ALTER must not start Spark")

    change = json.dumps({"rename_column": {"column": "v", "to": "value"}})
    assert main(["alter", path, "--change", change, "--enable-column-mapping", "--token", "t1"], no_session) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (out["operation"], out["version"]) == ("RENAME COLUMN", 1)
    assert [f["name"] for f in DeltaTable(path).snapshot().schema["fields"]] == ["id", "value"]
    for bad, message in [
        ("{not json", "not JSON"),
        ('{"drop_columns": ["id", "value"]}', "last column of the table"),
        ('{"explode": 1}', "exactly one of"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(["alter", path, "--change", bad], no_session)
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_info.value.code == 2 and len(err) == 1 and message in err[0], err
    assert DeltaTable(path).latest_version() == 1


def test_alter_drops_a_feature_by_name_with_no_spark(make_table, capsys):
    """``alter TABLE --drop-feature NAME [--truncate-history]``, the issue's
    form of ``--change '{"drop_feature": ...}'``; its misuses change nothing."""
    from airflow_delta_provider.delta.table_features.features import listed_features

    path = make_table(pa.table({"id": [1]}))

    def no_session(conf):
        raise AssertionError("dropping a writer feature must not start Spark")

    enable = json.dumps({"set_properties": {"delta.enableInCommitTimestamps": "true"}})
    assert main(["alter", path, "--change", enable], no_session) == 0
    assert "inCommitTimestamp" in listed_features(DeltaTable(path).snapshot().protocol)[1]
    capsys.readouterr()
    before = disk_files(path)
    for bad, message in [
        (["--change", enable, "--truncate-history"], "truncate_history goes with drop_feature"),
        (["--change", enable, "--drop-feature", "inCommitTimestamp"], "not allowed with argument --change"),
        (["--drop-feature", "inCommitTimestamp", "--truncate-history"], "dropped at once"),
        (["--drop-feature", "domainMetadata"], "domainMetadata"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(["alter", path, *bad], no_session)
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_info.value.code == 2 and len(err) == 1 and message in err[0], (bad, err)
    assert disk_files(path) == before

    assert main(["alter", path, "--drop-feature", "inCommitTimestamp"], no_session) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["operation"] == "DROP FEATURE"
    assert "inCommitTimestamp" not in listed_features(DeltaTable(path).snapshot().protocol)[1]


def test_cast_error_on_update_is_bad_input_and_changes_nothing(spark, make_table, capsys):
    """Spark 4 ANSI mode fails a bad cast at run time ([CAST_INVALID_INPUT],
    SQLSTATE 22018): that is bad input too, and the rewrite it broke is undone."""
    path = make_table(pa.table({"id": [1, 2], "v": [10, 20]}))
    before = disk_files(path)
    with pytest.raises(SystemExit) as exit_info:
        main(["update", path, "--condition", "id = 1", "--set", "v='abc'"], session_factory=lambda conf: spark)
    assert exit_info.value.code == 2
    # PySpark logs the error itself as one JSON line (its structured logger);
    # the hook skips those. The CLI's own output is one line.
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("{")]
    assert len(err) == 1, err
    assert err[0].startswith("InvalidInputError: [CAST_INVALID_INPUT]") and "'abc'" in err[0]
    assert disk_files(path) == before
    assert table_rows(path) == [(1, 10), (2, 20)]


def _java_error(spark, sql):
    """The Py4JJavaError (the JVM's own exception) behind a failing query."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as caught:
        spark.sql(sql).collect()
    raw = caught.value.__context__  # pyspark converts it "from None"; the original stays the context
    assert isinstance(raw, Py4JJavaError)
    return raw


def test_spark_error_inside_a_py4j_error_is_bad_input_by_its_sqlstate(spark):
    from py4j.protocol import Py4JJavaError

    from airflow_delta_provider.delta.errors import InvalidInputError
    from airflow_delta_provider.spark.cli import spark_input_error

    raw = _java_error(spark, "SELECT CAST('abc' AS INT)")
    # Wrapped in a plain SparkException (no SQLSTATE), as a failed job may be.
    jvm = spark.sparkContext._jvm
    wrapped = Py4JJavaError("job failed", jvm.org.apache.spark.SparkException("Job aborted", raw.java_exception))
    for exc in (raw, wrapped):
        translated = spark_input_error(exc)
        assert isinstance(translated, InvalidInputError)
        assert str(translated).startswith("[CAST_INVALID_INPUT]") and "\n" not in str(translated)

    internal = Py4JJavaError("internal", jvm.org.apache.spark.SparkException.internalError("broken"))
    assert spark_input_error(internal) is None  # SQLSTATE XX000: not the input's fault
    assert spark_input_error(RuntimeError("boom")) is None


def test_unexpected_error_exits_1_and_ends_with_one_summary_line(spark, make_table, capsys, monkeypatch):
    from airflow_delta_provider.operations.runners.spark import SPARK_RUNNERS
    from airflow_delta_provider.operations.update.spec import UpdateSpec

    path = make_table(pa.table({"id": [1]}))

    def crash(*args, **kwargs):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setitem(SPARK_RUNNERS, UpdateSpec, crash)
    with pytest.raises(SystemExit) as exit_info:
        main(["update", path, "--set", "id=2"], session_factory=lambda conf: spark)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "RuntimeError: disk on fire"
    assert any(line.startswith("Traceback") for line in err[:-1])  # the details stay for the log


def test_delete_without_a_condition_deletes_every_row(spark, make_table, capsys):
    """DeltaDeleteOperator documents "all rows when None": the CLI no longer requires --condition."""
    path = make_table(pa.table({"id": [1, 2, 3]}))
    assert main(["delete", path, "--token", "tk"], session_factory=lambda conf: spark) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (out["operation"], out["version"], out["metrics"]["numDeletedRows"]) == ("DELETE", 1, 3)
    assert table_rows(path) == []
    assert DeltaTable(path).latest_version() == 1


def test_overlapping_commands_in_threads_leave_pysparks_error_records_as_they_found_them():
    """Commands in threads (in-process writers) silence PySpark's process-wide error loggers in turn;
    when their windows overlap, the last one out restores what the first one in found."""
    import threading

    from pyspark.logger import PySparkLogger

    from airflow_delta_provider.spark.cli import SPARK_ERROR_LOGGERS, spark_error_records

    loggers = [PySparkLogger.getLogger(name) for name in SPARK_ERROR_LOGGERS]
    assert not any(logger.disabled for logger in loggers)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with spark_error_records(enabled=False):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with spark_error_records(enabled=False):
            b_in.set()
            a_out.wait(10)
            seen["silent while one remains"] = all(logger.disabled for logger in loggers)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == {"silent while one remains": True}
    assert not any(logger.disabled for logger in loggers)  # before the fix: silenced for good


#: A condition that sleeps 250 ms a row: a job's duration is known without timing anything.
SLOW_250 = "id >= 0 AND java_method('java.lang.Thread', 'sleep', cast(250 as bigint)) = 'null'"
#: The three INFO records a SparkContext prints before it applies ``spark.log.level``.
SPARK_START_INFO = ("INFO SparkContext: Running Spark version", "INFO SparkContext: OS info", "INFO SparkContext: Java version")


def _without_venv_on_path() -> dict[str, str]:
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.abspath(p) != venv_bin)
    env.pop("DELTA_PROGRESS_INTERVAL", None)  # the default interval
    return env


def test_the_console_script_works_from_a_venv_not_on_path_and_is_quiet(tmp_path):
    """``pip install`` gives ``delta-spark-app``; run from cron or a Docker entrypoint
    (``/venv/bin/delta-spark-app``, the venv not on PATH), PySpark would start its workers
    with ``python3`` from PATH, which has no pyarrow. Quiet: no INFO record, stdout the result."""
    path = str(tmp_path / "t")
    from deltalake import write_deltalake

    write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(ROOT)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    script = target / "bin" / "delta-spark-app"
    env = {**_without_venv_on_path(), "PYTHONPATH": str(target)}
    done = subprocess.run(
        [str(script), "delete", path, "--condition", "id = 2", "--io", "arrow", "--spark-conf", "spark.master=local[1]"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(table_rows(path)) == [(1,), (3,)]
    [result] = done.stdout.splitlines()  # stdout: the result alone
    assert json.loads(result)["operation"] == "DELETE"
    assert " INFO " not in done.stderr and "log4j" not in done.stderr, done.stderr
    warnings = [line for line in done.stderr.splitlines() if not line.startswith("progress: ")]
    assert len(warnings) <= 5, done.stderr  # Java's and Spark's warnings only


def test_the_spark_submit_form_is_quiet_keeps_stdout_for_the_result_and_reports_progress(tmp_path):
    """``spark-submit $(python -m airflow_delta_provider.spark --app-path) update ...`` (README):
    stdout is the JSON result alone, progress lines and errors go to stderr (spark-submit merges
    the Python driver's stderr into its stdout otherwise), and Spark's INFO records are quieted.
    The UPDATE runs two jobs of 12.5 s (50 rows sleeping 250 ms each, on one core): at the default
    interval of 10 s, at least two progress lines."""
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array(range(50), pa.int64()), "val": [f"v{i}" for i in range(50)]}))
    env = {k: v for k, v in os.environ.items() if k != "DELTA_PROGRESS_INTERVAL"}  # the default interval
    env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # as in an activated venv
    app = subprocess.run(
        [sys.executable, "-m", "airflow_delta_provider.spark", "--app-path"], capture_output=True, text=True,
        env=env, check=True,
    ).stdout.strip()  # fmt: skip
    assert app == str(ROOT / "airflow_delta_provider" / "spark" / "__main__.py")
    submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]",
              "--conf", f"spark.pyspark.python={sys.executable}", app]  # fmt: skip
    done = subprocess.run(
        [*submit, "update", path, "--condition", SLOW_250, "--set", "val = upper(val)"],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [result] = done.stdout.splitlines()
    assert json.loads(result)["metrics"]["numUpdatedRows"] == 50
    err = done.stderr.splitlines()
    progress = [line for line in err if line.startswith("progress: ")]
    assert len(progress) >= 2, done.stderr
    info = [line for line in err if " INFO " in line]
    assert all(any(start in line for start in SPARK_START_INFO) for line in info), info
    assert len(err) - len(progress) <= 12, done.stderr

    bad = subprocess.run([*submit, "update", path, "--set", "val = 'x'", "--io", "bogus"],
                         capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stdout == ""  # the error is not on the result's stream
    assert bad.stderr.splitlines()[-1].startswith("InvalidInputError: ")
