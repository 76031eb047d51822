"""DeltaSparkHook: the spark-submit it builds, how it fails, and a real run."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from airflow.providers.apache.spark.hooks import spark_submit
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException

import airflow_delta_provider
from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook, SparkTarget, application_path, operation_token
from tests.airflow_env import SPARK_TEST_CONF

POPEN = "airflow.providers.apache.spark.hooks.spark_submit.subprocess.Popen"


def _fake_popen(lines: list[str], returncode: int = 0) -> mock.MagicMock:
    process = mock.MagicMock()
    process.stdout = iter(line + "\n" for line in lines)
    process.wait.return_value = returncode
    popen = mock.MagicMock(return_value=process)
    return popen


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(autouse=True)
def _tables_are_not_read_before_a_fake_submit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The submits here are faked, on tables that do not exist (``/t``): the
    pre-flight check that reads the table first (tests/hooks/test_delta_operation.py)
    is left out, except for the real spark-submit."""
    if "real_spark_submit" not in request.node.name:
        monkeypatch.setattr(DeltaSparkHook, "preflight", lambda self, spec: None)


def test_operation_token_names_the_task_instance_not_the_try() -> None:
    token = operation_token("dag", "task", "manual__2024-01-01T00:00:00+00:00", 3)
    assert token == "dag/task/manual__2024-01-01T00:00:00+00:00/3"
    assert operation_token("d", "t", "r", None) == operation_token("d", "t", "r", -1)


def test_submit_command_carries_spark_options_package_and_operation(cache_dir: Path) -> None:
    printed = {"table": "/t", "operation": "UPDATE", "version": 4, "metrics": {"numUpdatedRows": "2"}}
    popen = _fake_popen(["26/01/01 INFO SparkContext: Running Spark", json.dumps(printed)])
    hook = DeltaSparkHook(
        conf={"spark.sql.shuffle.partitions": "2"},
        executor_memory="2g",
        driver_memory="1g",
        executor_cores=2,
        env_vars={"DELTA_X": "1"},
        package_cache_dir=cache_dir,
    )
    with mock.patch(POPEN, popen):
        result = hook.run("update", "/t", ["--condition", "id > 1", "--set", "v=v+1"])

    argv = popen.call_args.args[0]
    zips = list(cache_dir.glob("*.zip"))
    assert len(zips) == 1
    assert Path(argv[0]).name == "spark-submit"
    assert argv[1:] == [
        "--master",
        "local[2]",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--py-files",
        str(zips[0]),
        "--executor-cores",
        "2",
        "--executor-memory",
        "2g",
        "--driver-memory",
        "1g",
        "--name",
        "delta-update: /t",
        "--deploy-mode",
        "client",
        application_path(),
        "update",
        "/t",
        "--condition",
        "id > 1",
        "--set",
        "v=v+1",
    ]
    assert popen.call_args.kwargs["env"]["DELTA_X"] == "1"
    # Without a token there is no log to search: the printed line is the result.
    assert result == {"table": "/t", "operation": "UPDATE", "version": 4, "metrics": {"numUpdatedRows": 2}}


def test_user_settings_win_over_defaults(cache_dir: Path) -> None:
    popen = _fake_popen([])
    hook = DeltaSparkHook(
        conf={"spark.pyspark.python": "/opt/py"},
        py_files="extra.zip",
        name="nightly",
        package_cache_dir=cache_dir,
    )
    with mock.patch(POPEN, popen):
        hook.run("checkpoint", "/t")
    argv = popen.call_args.args[0]
    assert f"spark.pyspark.python={sys.executable}" not in argv
    assert "spark.pyspark.python=/opt/py" in argv
    assert argv[argv.index("--py-files") + 1].endswith(".zip,extra.zip")
    assert argv[argv.index("--name") + 1] == "nightly"


def test_application_args_are_the_hooks_to_build() -> None:
    with pytest.raises(TypeError, match="application_args"):
        DeltaSparkHook(application_args=["x"])


def test_unknown_operation_is_refused() -> None:
    with pytest.raises(ValueError, match="upsert"):
        DeltaSparkHook().run("upsert", "/t")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("SchemaMismatchError: column x is long in the table, string in the data", AirflowFailException),
        ("ConcurrentAppendError: files were added to the data this update read", AirflowException),
    ],
)
def test_failure_carries_the_applications_one_line_error(cache_dir: Path, line: str, expected: type) -> None:
    popen = _fake_popen(["26/01/01 INFO SparkContext: Running Spark", line, "26/01/01 INFO ShutdownHookManager"], 2)
    hook = DeltaSparkHook(package_cache_dir=cache_dir)
    with mock.patch(POPEN, popen), pytest.raises(AirflowException) as raised:
        hook.run("append", "/t", ["--source", "/s", "--format", "parquet"])
    assert type(raised.value) is expected
    assert str(raised.value) == f"Delta append on /t failed: {line}"


def test_failure_without_an_error_line_keeps_spark_submits_message(cache_dir: Path) -> None:
    popen = _fake_popen(["Error: Unrecognized option: --bogus"], 1)
    with mock.patch(POPEN, popen), pytest.raises(AirflowException, match="Unrecognized option"):
        DeltaSparkHook(package_cache_dir=cache_dir).run("vacuum", "/t")


def test_spark_info_records_and_their_continuation_lines_are_quiet_unless_debug() -> None:
    """Progress lines are always shown: not a quieted INFO record's continuation, and no problem to quote."""
    from airflow_delta_provider.hooks.delta_spark import _SparkOutput

    lines = [
        ("26/11/27 21:53:41 INFO DAGScheduler: Submitting ResultStage 1 (MapPartitionsRDD[38] at collect", False),
        (":  +- Filter isnotnull(order_id#235L)", False),
        ("+- Project [order_id#235L]", False),
        ("[rdd_38_0])", False),
        ("26/11/27 21:53:41 INFO DAGScheduler: Submitting ResultStage 3 (", False),
        ("MapPartitionsRDD[6] at collect at /c/p.zip/airflow_delta_provider/operations/merge/prune.py:98), wh", False),
        ("MapPartitionsRDD[6] at collect at /c/p.zip/airflow_delta_provider/operations/merge/prune.py:98) (fi", False),
        ("26/11/27 21:53:42 WARN Utils: Your hostname, vm, resolves to a loopback address", True),
        ("   a warning's own continuation", True),
        ('{"table": "/t", "operation": "MERGE", "version": 2, "metrics": {}}', False),
        ("Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties", True),
        ("26/11/27 21:53:43 INFO SparkContext: Invoking stop() from shutdown hook", False),
        ("progress: stage 3 (parquet at NativeMethodAccessorImpl.java:0), 45/200 tasks, 0:00:23", True),
        ("InvalidInputError: invalid condition 'x > 1'", False),
    ]
    quiet = _SparkOutput()
    assert [quiet.observe(line) for line, _ in lines] == [shown for _, shown in lines]
    assert quiet.result == {"table": "/t", "operation": "MERGE", "version": 2, "metrics": {}}
    assert quiet.error_name == "InvalidInputError"
    assert list(quiet.problems) == [lines[7][0], lines[8][0].strip(), lines[10][0]]
    verbose = _SparkOutput(verbose=True)
    assert all(verbose.observe(line) for line, _ in lines)


def test_a_missing_connection_is_named_with_how_to_define_it(cache_dir: Path) -> None:
    popen = _fake_popen([])
    with mock.patch(POPEN, popen), pytest.raises(AirflowFailException) as raised:
        DeltaSparkHook(conn_id="spark_nowhere", package_cache_dir=cache_dir).run("vacuum", "/t")
    message = str(raised.value)
    assert message.startswith("the Spark connection 'spark_nowhere' is not defined")
    assert """AIRFLOW_CONN_SPARK_NOWHERE='{"conn_type": "spark", "host": "local[*]"}'""" in message
    assert "Admin > Connections" in message
    popen.assert_not_called()  # not submitted to YARN by default


def test_the_error_line_is_the_whole_failure_unless_debug(cache_dir: Path) -> None:
    """No chained SparkSubmitHook error (the command line and its output) unless debug."""
    line = "InvalidInputError: invalid condition 'x > 1'"
    for arguments, chained in ((["--condition", "x > 1"], False), (["--condition", "x > 1", "--debug"], True)):
        popen = _fake_popen(["26/01/01 12:00:00 INFO SparkContext: Running Spark", line], 2)
        with mock.patch(POPEN, popen), pytest.raises(AirflowFailException) as raised:
            DeltaSparkHook(package_cache_dir=cache_dir).run("delete", "/t", arguments)
        assert str(raised.value) == f"Delta delete on /t failed: {line}"
        assert (raised.value.__cause__ is not None) is chained


def test_a_crash_without_an_error_line_quotes_its_last_warnings_and_errors(cache_dir: Path) -> None:
    popen = _fake_popen(
        [
            "26/01/01 12:00:00 INFO SparkContext: Running Spark version 4.0.1",
            "26/01/01 12:00:01 WARN TaskSetManager: Lost task 0.0 in stage 1.0",
            "26/01/01 12:00:02 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)",
            "\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:620)",
            'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
            "26/01/01 12:00:03 INFO ShutdownHookManager: Shutdown hook called",
        ],
        137,
    )
    with mock.patch(POPEN, popen), pytest.raises(AirflowException) as raised:
        DeltaSparkHook(package_cache_dir=cache_dir).run("vacuum", "/t")
    message = str(raised.value)
    assert message.splitlines() == [
        "Delta vacuum on /t failed: spark-submit exited with code 137, reporting no error of the application. "
        "Its last warnings and errors:",
        "26/01/01 12:00:01 WARN TaskSetManager: Lost task 0.0 in stage 1.0",
        "26/01/01 12:00:02 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)",
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
    ]
    assert type(raised.value) is AirflowException and raised.value.__cause__ is None  # a retry may help
    assert "spark-submit --master" not in message


def test_delta_spark_connections_are_read_as_spark(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTA_LOCAL",
        json.dumps({"conn_type": "delta_spark", "host": "local[1]", "extra": {"deploy-mode": "client"}}),
    )
    hook = DeltaSparkHook(conn_id="delta_local", package_cache_dir=cache_dir)
    assert hook.spark_target() == SparkTarget(master="local[1]", deploy_mode="client", spark_binary="spark-submit")
    popen = _fake_popen([])
    with mock.patch(POPEN, popen):
        hook.run("checkpoint", "/t")
    argv = popen.call_args.args[0]
    assert argv[argv.index("--master") + 1] == "local[1]"
    assert argv[argv.index("--deploy-mode") + 1] == "client"
    assert f"spark.pyspark.python={sys.executable}" in argv


def test_spark_submit_is_found_beside_the_interpreter(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    sibling = Path(sys.executable).parent / "spark-submit"
    if not sibling.is_file():
        pytest.skip("pyspark's spark-submit is not installed beside this interpreter")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    popen = _fake_popen([])
    with mock.patch(POPEN, popen):
        DeltaSparkHook(package_cache_dir=cache_dir).run("checkpoint", "/t")
    assert popen.call_args.args[0][0] == str(sibling)
    # pip's launcher would look for SPARK_HOME with the python3 on PATH: it is given.
    import pyspark

    assert popen.call_args.kwargs["env"]["SPARK_HOME"] == str(Path(pyspark.__file__).parent)


def _write_commit(log: Path, version: int, actions: list[dict]) -> None:
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def test_an_earlier_commit_with_the_token_is_returned_without_submitting(tmp_path: Path) -> None:
    pytest.importorskip("airflow_delta_provider.delta.table")
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    log = tmp_path / "t" / "_delta_log"
    _write_commit(
        log,
        0,
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {
                "metaData": {
                    "id": "6f2c1c5e-0000-4000-8000-000000000000",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(schema),
                    "partitionColumns": [],
                    "configuration": {},
                    "createdTime": 1,
                }
            },
            {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE", "operationParameters": {}}},
        ],
    )
    _write_commit(
        log,
        1,
        [
            {
                "commitInfo": {
                    "timestamp": 2,
                    "operation": "DELETE",
                    "operationMetrics": {"numDeletedRows": "3"},
                    "tags": {TOKEN_TAG: "d/t/r/-1"},
                }
            }
        ],
    )
    popen = mock.MagicMock()
    with mock.patch(POPEN, popen):
        result = DeltaSparkHook().run("delete", str(tmp_path / "t"), token="d/t/r/-1")
    popen.assert_not_called()
    assert result == {
        "table": str(tmp_path / "t"),
        "version": 1,
        "operation": "DELETE",
        "metrics": {"numDeletedRows": 3},
    }


# --- Real spark-submit ----------------------------------------------------------


@pytest.mark.usefixtures("airflow_db")
def test_real_spark_submit_commits_and_reads_the_result_from_the_log(tmp_path: Path, monkeypatch, capfd) -> None:
    """Also: the task log is never silent for an interval (here 1 s) while spark-submit starts and runs."""
    monkeypatch.setenv("DELTA_PROGRESS_INTERVAL", "1")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from deltalake import DeltaTable as ReaderTable

    pytest.importorskip("airflow_delta_provider.spark.__main__")
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]}), source)
    table = str(tmp_path / "table")

    hook = DeltaSparkHook(conf=SPARK_TEST_CONF, package_cache_dir=tmp_path / "cache")
    result = hook.run("append", table, ["--source", str(source), "--format", "parquet"], token="dag/task/run/-1")
    # the JVM alone takes seconds to start, and says nothing the task log shows (Airflow's logs: structlog, on the fds)
    assert "progress: still running (nothing said for 0:00:01)" in "".join(capfd.readouterr())

    assert result["table"] == table
    assert result["version"] == 0
    assert result["operation"] == "WRITE"
    assert result["metrics"]["numOutputRows"] == 3
    assert sorted(ReaderTable(table).to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3]

    with pytest.raises(AirflowFailException, match=r"^Delta update on .* failed: \w+Error: "):
        hook.run("update", table, ["--condition", "no_such_column = 1", "--set", "name='x'"], token="d/t/r2/-1")
    assert ReaderTable(table).version() == 0


def test_on_kill_stops_the_running_spark_submit(cache_dir: Path) -> None:
    """The operator's on_kill reaches the running submit, which SparkSubmitHook kills."""
    import subprocess
    import threading

    from airflow_delta_provider.operators.delta import DeltaCheckpointOperator

    real_popen = subprocess.Popen
    started: list[subprocess.Popen] = []

    def spark_submit(argv, **kwargs):
        started.append(real_popen(["sleep", "60"], **kwargs))
        return started[-1]

    op = DeltaCheckpointOperator(task_id="cp", table_path="/t", hook_params={"package_cache_dir": cache_dir})
    failed: list[BaseException] = []

    def run() -> None:
        try:
            op.hook.run("checkpoint", "/t")
        except BaseException as err:
            failed.append(err)

    with mock.patch(POPEN, side_effect=spark_submit):
        thread = threading.Thread(target=run)
        thread.start()
        try:
            for _ in range(200):
                if started:
                    break
                time.sleep(0.05)
            assert started, "spark-submit was not started"
            op.on_kill()
            thread.join(timeout=10)
        finally:
            for process in started:
                if process.poll() is None:
                    process.kill()
    assert not thread.is_alive()
    assert started[0].wait(timeout=10) != 0
    assert len(failed) == 1 and isinstance(failed[0], AirflowException)


# --- store credentials (storage_conn_id) ---------------------------------------------


@pytest.mark.parametrize("master", ["local[2]", "yarn"])
def test_store_credentials_travel_in_the_environment_only(cache_dir: Path, monkeypatch, master: str) -> None:
    """On every master, YARN included (where SparkSubmitHook turns
    env_vars into --conf arguments), the secret is in the process environment
    and nowhere on the command line."""
    secret = "s3cr3t-" + "x" * 12
    monkeypatch.setenv("AIRFLOW_CONN_MY_S3", json.dumps({"conn_type": "aws", "login": "AKIA1", "password": secret}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": master}))
    printed = {"table": "s3://b/t", "operation": "CHECKPOINT", "version": 1, "metrics": {}}
    popen = _fake_popen([json.dumps(printed)])
    hook = DeltaSparkHook(conn_id="spark_test", storage_conn_id="my_s3", package_cache_dir=cache_dir)
    with mock.patch(POPEN, popen):
        hook.run("checkpoint", "s3://b/t", ["--io", "arrow"])
    argv = popen.call_args.args[0]
    assert not any(secret in arg for arg in argv)
    env = popen.call_args.kwargs["env"]
    assert env["AWS_SECRET_ACCESS_KEY"] == secret and env["AWS_ACCESS_KEY_ID"] == "AKIA1"


def test_store_credentials_are_refused_in_cluster_deploy_mode(cache_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_MY_S3", json.dumps({"conn_type": "aws", "login": "AKIA1", "password": "pw"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_CLUSTER",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    popen = _fake_popen([])
    hook = DeltaSparkHook(conn_id="spark_cluster", storage_conn_id="my_s3", package_cache_dir=cache_dir)
    with mock.patch(POPEN, popen), pytest.raises(AirflowFailException, match="cluster deploy mode"):
        hook.run("checkpoint", "s3://b/t")
    popen.assert_not_called()


@pytest.mark.parametrize("master", ["local[2]", "yarn"])
def test_store_credentials_and_env_vars_together(cache_dir: Path, monkeypatch, master: str) -> None:
    """With env_vars of the user's own, the secret still reaches the environment
    only, and env_vars keep SparkSubmitHook's meaning (on YARN: appMasterEnv conf)."""
    secret = "s3cr3t-" + "y" * 12
    monkeypatch.setenv("AIRFLOW_CONN_MY_S3", json.dumps({"conn_type": "aws", "login": "AKIA1", "password": secret}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": master}))
    popen = _fake_popen([])
    hook = DeltaSparkHook(
        conn_id="spark_test", storage_conn_id="my_s3", env_vars={"MY_FLAG": "1"}, package_cache_dir=cache_dir
    )
    with mock.patch(POPEN, popen):
        hook.run("checkpoint", "s3://b/t")
    argv = popen.call_args.args[0]
    env = popen.call_args.kwargs["env"]
    assert not any(secret in arg for arg in argv)
    assert env["AWS_SECRET_ACCESS_KEY"] == secret and env["MY_FLAG"] == "1"
    if master == "yarn":
        assert "spark.yarn.appMasterEnv.MY_FLAG=1" in argv
    else:
        assert not any("MY_FLAG" in arg for arg in argv)


def test_env_vars_alone_are_spark_submit_hooks(cache_dir: Path, monkeypatch) -> None:
    """Without variables of the hook's own, env_vars go to SparkSubmitHook untouched."""
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")  # no SPARK_HOME of the hook's own
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": "yarn"}))
    popen = _fake_popen([])
    with mock.patch(POPEN, popen):
        DeltaSparkHook(conn_id="spark_test", env_vars={"MY_FLAG": "1"}, package_cache_dir=cache_dir).run(
            "checkpoint", "/t"
        )
    assert "spark.yarn.appMasterEnv.MY_FLAG=1" in popen.call_args.args[0]
    assert popen.call_args.kwargs["env"]["MY_FLAG"] == "1"


@pytest.mark.parametrize("argument", ["track_driver_via_k8s_api", "yarn_track_via_rm_api"])
def test_arguments_that_end_the_submit_early_are_refused(argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        DeltaSparkHook(**{argument: True})


def test_unknown_arguments_are_refused_when_the_hook_is_built() -> None:
    with pytest.raises(TypeError, match="executor_mem"):
        DeltaSparkHook(executor_mem="1g")


# --- Spark standalone, cluster deploy mode --------------------------------------


def _driver_state(*states: str):
    replies = iter(states)

    def get(url: str, timeout: float):
        response = mock.MagicMock()
        response.json.return_value = {"action": "SubmissionStatusResponse", "driverState": next(replies)}
        get.urls.append(url)
        return response

    get.urls = []
    return get


@pytest.mark.parametrize(("states", "fails"), [(("RUNNING", "FINISHED"), False), (("RUNNING", "FAILED"), True)])
def test_a_standalone_cluster_driver_is_waited_for(cache_dir: Path, monkeypatch, states, fails) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_STANDALONE",
        json.dumps({"conn_type": "spark", "host": "spark://m1", "port": 7077, "extra": {"deploy-mode": "cluster"}}),
    )
    popen = _fake_popen(["INFO Client: Driver successfully submitted as driver-20260101000000-0001"])
    get = _driver_state(*states)
    hook = DeltaSparkHook(
        conn_id="spark_standalone",
        status_poll_interval=0,
        post_submit_commands=["true"],
        package_cache_dir=cache_dir,
    )
    ran: list[list[str]] = []
    real_run = __import__("subprocess").run
    with (
        mock.patch(POPEN, popen),
        mock.patch("requests.get", get),
        mock.patch("subprocess.run", side_effect=lambda cmd, **kw: ran.append(cmd) or real_run(cmd, **kw)),
    ):
        if fails:
            with pytest.raises(AirflowException, match="driver-20260101000000-0001 ended as FAILED"):
                hook.run("vacuum", "/t")
        else:
            hook.run("vacuum", "/t")
        hook.on_kill()  # the post-submit commands already ran: not again
    assert get.urls == ["http://m1:6066/v1/submissions/status/driver-20260101000000-0001"] * 2
    assert ran == [["true"]]
    argv = popen.call_args_list[0].args[0]
    assert argv[argv.index("--master") + 1] == "spark://m1:7077"
    assert not any(arg.startswith("spark.pyspark") for arg in argv)  # a remote driver: the cluster's Python


# --- How the connection is read: the same as SparkSubmitHook -------------------


@pytest.mark.parametrize(
    ("conn", "kwargs"),
    [
        ({"conn_type": "spark", "host": "local[*]"}, {}),
        ({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster", "queue": "q"}}, {}),
        ({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}, {"deploy_mode": "client"}),
        ({"conn_type": "spark", "host": "spark://m1", "port": 7077, "extra": {"spark-binary": "spark3-submit"}}, {}),
        ({"conn_type": "spark", "host": "m1", "port": 7077}, {"spark_binary": "/opt/spark/bin/spark-submit"}),
        ({"conn_type": "delta_spark", "host": "local[1]", "extra": {"deploy-mode": "client"}}, {}),
        (None, {"deploy_mode": "client"}),
    ],
)
def test_the_connection_is_read_as_spark_submit_hook_reads_it(monkeypatch, conn, kwargs) -> None:
    """SparkTarget repeats SparkSubmitHook's documented reading of a connection,
    which it keeps private; if the provider ever reads one differently, this fails."""
    from airflow_delta_provider.hooks.delta_spark import _DeltaSparkSubmitHook, _SparkOutput

    if conn is not None:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_READ", json.dumps(conn))
    target = DeltaSparkHook(conn_id="spark_read", **kwargs).spark_target()
    upstream = _DeltaSparkSubmitHook(output=_SparkOutput(), conn_id="spark_read", **kwargs)
    resolved = upstream._connection  # read in a test only, to compare
    assert (target.master, target.deploy_mode, target.spark_binary) == (
        resolved["master"],
        resolved["deploy_mode"],
        resolved["spark_binary"],
    )
    assert target.standalone_cluster == upstream._should_track_driver_status


def test_a_kubernetes_master_is_read_as_documented(monkeypatch) -> None:
    """A k8s:// master (SparkSubmitHook itself needs the cncf-kubernetes
    provider to read one, so there is nothing upstream to compare with here)."""
    conn = {"conn_type": "spark", "host": "k8s://https://k8s:443", "extra": {"deploy-mode": "cluster"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_READ", json.dumps(conn))
    target = DeltaSparkHook(conn_id="spark_read").spark_target()
    assert (target.master, target.deploy_mode) == ("k8s://https://k8s:443", "cluster")
    assert target.kubernetes and target.cluster and not target.yarn and not target.standalone_cluster


# --- SparkSubmitHook's private API stays private ---------------------------------


def _spark_submit_private_names() -> set[str]:
    """Every private name of SparkSubmitHook: its class members and the attributes it assigns."""
    names = {n for n in dir(SparkSubmitHook) if n.startswith("_") and not n.endswith("__")}
    tree = ast.parse(inspect.getsource(spark_submit))
    names |= {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr.startswith("_")
        and not node.attr.endswith("__")
    }
    return names


def _package_modules() -> list[str]:
    root = Path(airflow_delta_provider.__file__).parent
    return [
        info.name
        for info in pkgutil.walk_packages([str(root)], prefix="airflow_delta_provider.")
        if not info.name.endswith("__main__")
    ]


def _spark_submit_subclasses() -> list[type]:
    subclasses = []
    for module_name in _package_modules():
        module = importlib.import_module(module_name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module_name and issubclass(cls, SparkSubmitHook):
                subclasses.append(cls)
    return subclasses


def _private_overrides(classes: list[type]) -> list[str]:
    """The private members that SparkSubmitHook subclasses define (dunders aside)."""
    return sorted(
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in classes
        if issubclass(cls, SparkSubmitHook)
        for name in vars(cls)
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
    )


def _private_assignments(tree: ast.AST, where: str, subclass_names: set[str], in_hooks: bool) -> list[str]:
    """Where ``tree`` assigns a name private to SparkSubmitHook on another object, or
    any private attribute on ``self`` in a SparkSubmitHook subclass; in the hooks,
    also where it reads one."""
    private = _spark_submit_private_names()
    found: list[str] = []

    def check(node: ast.AST, in_subclass: bool) -> None:
        if isinstance(node, ast.ClassDef):
            in_subclass = node.name in subclass_names or any(
                isinstance(base, ast.Name) and base.id == "SparkSubmitHook" for base in node.bases
            )
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and name.value in private:
                found.append(f"{where}:{node.lineno} {node.func.id} {name.value}")
        elif in_hooks and isinstance(node, ast.Attribute) and node.attr in private:
            found.append(f"{where}:{node.lineno} reads {node.attr}")
        for target in targets:
            for sub in ast.walk(target):
                if not isinstance(sub, ast.Attribute) or not sub.attr.startswith("_"):
                    continue
                on_self = isinstance(sub.value, ast.Name) and sub.value.id == "self"
                if (on_self and in_subclass) or (not on_self and sub.attr in private):
                    found.append(f"{where}:{sub.lineno} assigns {sub.attr}")
        for child in ast.iter_child_nodes(node):
            check(child, in_subclass)

    check(tree, False)
    return found


def test_no_class_overrides_a_private_member_of_spark_submit_hook() -> None:
    """A SparkSubmitHook subclass in the package defines public members only:
    none of SparkSubmitHook's private ones, nor private ones that it might add."""
    subclasses = _spark_submit_subclasses()
    assert _private_overrides(subclasses) == []
    assert DeltaSparkHook not in subclasses  # it holds one, per run


def test_no_module_assigns_a_private_attribute_of_spark_submit_hook() -> None:
    """Nowhere in the package is a name private to SparkSubmitHook assigned on
    another object (``hook._conf = ...``, ``setattr(hook, "_env", ...)``,
    ``del hook._name``), nor any private attribute on ``self`` in a
    SparkSubmitHook subclass. In the hooks, not even read."""
    assert {"_conf", "_env", "_connection", "_submit_sp", "_process_spark_submit_log"} <= _spark_submit_private_names()
    subclass_names = {cls.__name__ for cls in _spark_submit_subclasses()}
    root = Path(airflow_delta_provider.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        where = str(path.relative_to(root))
        found += _private_assignments(
            ast.parse(path.read_text(), where), where, subclass_names, path.parent.name == "hooks"
        )
    assert found == []


def test_the_private_api_checks_find_what_the_old_hook_did() -> None:
    """Fed the overrides and assignments the hook once made, both checks report them."""

    class Old(SparkSubmitHook):
        def _process_spark_submit_log(self, itr):  # pragma: no cover - never run
            return super()._process_spark_submit_log(itr)

    assert _private_overrides([Old]) == [f"{__name__}.{Old.__qualname__}._process_spark_submit_log"]
    old = ast.parse(
        "class Old(DeltaOperationMixin, SparkSubmitHook):\n"
        "    def _prepare(self):\n"
        "        self._application_args = []\n"
        "        self._delta_own = 1\n"
        "class Holder:\n"
        "    def run(self, hook):\n"
        "        hook._conf['x'] = 1\n"
        "        hook._env = {}\n"
        "        setattr(hook, '_name', 'n')\n"
        "        self._name = 'mine'\n"
        "        return hook._connection\n"
    )
    assert _private_assignments(old, "old.py", set(), in_hooks=False) == [
        "old.py:3 assigns _application_args",
        "old.py:4 assigns _delta_own",
        "old.py:7 assigns _conf",
        "old.py:8 assigns _env",
        "old.py:9 setattr _name",
    ]
    assert "old.py:11 reads _connection" in _private_assignments(old, "old.py", set(), in_hooks=True)


def test_a_catalog_name_submits_its_location_with_the_vended_credentials_in_the_environment(
    cache_dir: Path, monkeypatch, uc_on_azurite, uc_server
) -> None:
    """The application gets the table's location, never the name's secrets: the catalog's token
    and the SAS it vends travel in spark-submit's environment only (the planted-secret check),
    with the name, so that the application renews the SAS (tests/spark/test_cli_catalogs.py)."""
    table = uc_on_azurite
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    printed = {"table": table["location"], "operation": "CHECKPOINT", "version": 0, "metrics": {}}
    popen = _fake_popen([json.dumps(printed)])
    hook = DeltaSparkHook(conn_id="spark_test", package_cache_dir=cache_dir)
    with mock.patch(POPEN, popen):
        result = hook.run("checkpoint", table["name"], ["--io", "arrow"])
    argv = popen.call_args.args[0]
    env = popen.call_args.kwargs["env"]
    assert table["location"] in argv and table["name"] not in argv
    sas = env["AZURE_STORAGE_SAS_KEY"]
    assert "sig=" in sas and not any(sas in arg or table["token"] in arg for arg in argv)
    assert result["table"] == table["location"] and result["version"] == 0
    # With the name and the catalog's token, by environment too, the application renews that SAS.
    assert (env["DELTA_CATALOG_RENEWS"], env["UNITY_CATALOG_TOKEN"]) == (table["name"], table["token"])
