"""DeltaSparkHook: the spark-submit it builds, how it fails, and a real run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from unittest import mock

import pytest
from tests.airflow_env import SPARK_TEST_CONF
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook, application_path, operation_token

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


def test_delta_spark_connections_are_read_as_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTA_LOCAL",
        json.dumps({"conn_type": "delta_spark", "host": "local[1]", "extra": {"deploy-mode": "client"}}),
    )
    hook = DeltaSparkHook(conn_id="delta_local")
    assert hook._connection["master"] == "local[1]"
    assert hook._connection["deploy_mode"] == "client"


def test_spark_submit_is_found_beside_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (Path(sys.executable).parent / "spark-submit").is_file():
        pytest.skip("pyspark's spark-submit is not installed beside this interpreter")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert DeltaSparkHook()._get_spark_binary_path() == [str(Path(sys.executable).parent / "spark-submit")]


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
def test_real_spark_submit_commits_and_reads_the_result_from_the_log(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from deltalake import DeltaTable as ReaderTable

    pytest.importorskip("airflow_delta_provider.spark.__main__")
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]}), source)
    table = str(tmp_path / "table")

    hook = DeltaSparkHook(conf=SPARK_TEST_CONF, package_cache_dir=tmp_path / "cache")
    result = hook.run("append", table, ["--source", str(source), "--format", "parquet"], token="dag/task/run/-1")

    assert result["table"] == table
    assert result["version"] == 0
    assert result["operation"] == "WRITE"
    assert result["metrics"]["numOutputRows"] == 3
    assert sorted(ReaderTable(table).to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3]

    with pytest.raises(AirflowFailException, match=r"^Delta update on .* failed: \w+Error: "):
        hook.run("update", table, ["--condition", "no_such_column = 1", "--set", "name='x'"], token="d/t/r2/-1")
    assert ReaderTable(table).version() == 0


def test_on_kill_stops_the_running_spark_submit():
    """The operator's on_kill reaches the hook, which kills spark-submit."""
    import subprocess

    from airflow_delta_provider.operators.delta import DeltaCheckpointOperator

    op = DeltaCheckpointOperator(task_id="cp", table_path="/t")
    process = subprocess.Popen(["sleep", "60"])
    try:
        op.hook._submit_sp = process
        op.on_kill()
        assert process.wait(timeout=10) != 0
    finally:
        if process.poll() is None:
            process.kill()


# --- store credentials (storage_conn_id) ---------------------------------------------


@pytest.mark.parametrize("master", ["local[2]", "yarn"])
def test_store_credentials_travel_in_the_environment_only(cache_dir: Path, monkeypatch, master: str) -> None:
    """On every master, YARN included (where SparkSubmitHook turns
    env_vars into --conf arguments), the secret is in the process environment
    and nowhere on the command line."""
    secret = "s3cr3t-" + "x" * 12
    monkeypatch.setenv(
        "AIRFLOW_CONN_MY_S3", json.dumps({"conn_type": "aws", "login": "AKIA1", "password": secret})
    )
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
