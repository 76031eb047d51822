"""DeltaInProcessHook: operations in the task's process, over a real Spark Connect server or with no Spark."""

from __future__ import annotations

import json
import threading
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_delta_provider.hooks.delta_in_process import PYTHON_ENGINE_OPERATIONS, DeltaInProcessHook
from tests.spark_connect_server import wait_until
from tests.storage_servers import free_port

TOKEN_SECRET = "connect-token-s3cr3t"


def _orders(path: Path, rows: int = 10) -> str:
    from deltalake import write_deltalake

    ids = list(range(rows))
    write_deltalake(str(path), pa.table({"order_id": pa.array(ids, pa.int64()), "amount": pa.array(ids, pa.int64())}))
    return str(path)


@pytest.fixture
def connect_conn(spark_connect, monkeypatch) -> str:
    """A ``spark_connect`` connection to the shared server (a token would ask for TLS, which it has not)."""
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": spark_connect.port, "login": "airflow"}
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_CONNECT", json.dumps(conn))
    return "delta_connect"


def test_the_python_engine_operations_are_the_requests() -> None:
    """One list, defined with the requests, that the hook and the Spark CLI both use."""
    assert PYTHON_ENGINE_OPERATIONS is PYTHON_ENGINE_OPERATIONS
    expected = {"checkpoint", "vacuum", "alter", "restore", "convert", "generate", "clone", "register"}
    assert set(PYTHON_ENGINE_OPERATIONS) == expected


def test_an_update_over_connect_commits_and_reads_its_result_from_the_log(connect_conn, tmp_path) -> None:
    table = _orders(tmp_path / "orders")
    hook = DeltaInProcessHook(connect_conn, package_cache_dir=tmp_path / "cache")
    result = hook.run("update", table, ["--condition", "amount > 6", "--set", "amount = 0"], token="d/t/r/-1")
    assert (result["version"], result["operation"], result["metrics"]["numUpdatedRows"]) == (1, "UPDATE", 3)
    # The same token again: the earlier commit, with no second run.
    again = hook.run("update", table, ["--condition", "amount > 6", "--set", "amount = 0"], token="d/t/r/-1")
    assert again == result
    from deltalake import DeltaTable

    assert DeltaTable(table).version() == 1


def test_bad_input_fails_for_good_with_one_clear_line(connect_conn, tmp_path, caplog, capfd) -> None:
    table = _orders(tmp_path / "orders")
    hook = DeltaInProcessHook(connect_conn, package_cache_dir=tmp_path / "cache")
    with pytest.raises(AirflowFailException) as caught:
        hook.run("update", table, ["--condition", "nosuchcol > 3", "--set", "amount = 1"], token="d/t/r/-1")
    message = str(caught.value)
    assert message.startswith(
        f"Delta update on {table} failed: UnresolvedColumnError: invalid condition 'nosuchcol > 3'"
    )
    assert "Did you mean one of the following? [`amount`, `order_id`]" in message
    assert caught.value.__cause__ is None  # no chained Spark error with its stack
    printed = capfd.readouterr()
    everything = caplog.text + printed.out + printed.err
    assert "SQLQueryContextLogger" not in everything and "JVM stacktrace" not in everything


def test_an_unreachable_server_fails_for_a_retry_and_hides_the_token(tmp_path, monkeypatch, caplog) -> None:
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": free_port(), "password": TOKEN_SECRET}
    monkeypatch.setenv("AIRFLOW_CONN_DEAD_CONNECT", json.dumps(conn))
    table = _orders(tmp_path / "orders")
    with pytest.raises(AirflowException) as caught:
        DeltaInProcessHook("dead_connect").run("delete", table, ["--condition", "order_id = 1"], token="d/t/r/-1")
    assert not isinstance(caught.value, AirflowFailException)  # a retry may find the server up
    assert "EngineUnavailableError: cannot reach the Spark Connect server at sc://127.0.0.1:" in str(caught.value)
    assert "UNAVAILABLE" in str(caught.value)
    everything = "".join(traceback.format_exception(caught.value)) + caplog.text  # chained causes included
    assert TOKEN_SECRET not in everything


def test_on_kill_interrupts_the_running_operation(connect_conn, tmp_path) -> None:
    table = _orders(tmp_path / "orders", rows=400)
    slow = "order_id >= 0 AND java_method('java.lang.Thread', 'sleep', cast(20 as bigint)) = 'null'"
    hook = DeltaInProcessHook(connect_conn, package_cache_dir=tmp_path / "cache")
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = hook.run("update", table, ["--condition", slow, "--set", "amount = 0"], token="k")
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: hook._command is not None and hook._command._session is not None)
    time.sleep(2.0)
    assert thread.is_alive()
    started = time.monotonic()
    hook.on_kill()
    thread.join(timeout=120)
    assert time.monotonic() - started < 60
    assert isinstance(outcome.get("error"), AirflowException), outcome
    assert "OperationInterruptedError: the update was interrupted before it committed" in str(outcome["error"])
    from deltalake import DeltaTable

    assert DeltaTable(table).version() == 0


def test_the_python_engine_checkpoints_without_spark(tmp_path) -> None:
    table = _orders(tmp_path / "orders")
    result = DeltaInProcessHook(None).run("checkpoint", table, ["--cleanup-logs"], token="d/cp/r/-1")
    assert (result["operation"], result["version"]) == ("CHECKPOINT", 0)
    assert result["metrics"]["numAddFiles"] == 1
    assert (Path(table) / "_delta_log" / f"{0:020d}.checkpoint.parquet").is_file()


def test_the_python_engine_refuses_operations_that_need_spark(tmp_path) -> None:
    table = _orders(tmp_path / "orders")
    with pytest.raises(AirflowFailException, match="update needs Spark"):
        DeltaInProcessHook(None).run("update", table, ["--set", "amount = 1"])
