"""hooks/delta_operation.py: the run every hook shares; here, its pre-flight.

Bad input fails in the task's own process, from the table's log alone, before
any spark-submit or Spark Connect call: one line, no retry, nothing written.
The operators run through ``dag.test()``, with spark-submit's ``submit`` made
to fail the test if anything reaches it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.operators.delta import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaUpdateOperator,
)
from tests.airflow_env import run_dag, task_states, task_tries

ORDERS = pa.table(
    {
        "order_id": pa.array([1, 2], pa.int64()),
        "status": ["pending", "shipped"],
        "updated_at": pa.array([1, 2], pa.int64()),
    }
)


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every spark-submit and Spark Connect command that starts: none may."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_delta_provider.spark.in_process import InProcessCommand

    started: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        raise AssertionError("Spark was started")

    monkeypatch.setattr(SparkSubmitHook, "submit", refuse)
    monkeypatch.setattr(InProcessCommand, "__init__", refuse)
    return started


@pytest.mark.usefixtures("airflow_db")
def test_the_readme_dags_bad_inputs_fail_before_spark_starts(tmp_path: Path, no_spark: list[Any], capfd, caplog):
    """The README's DAG with the mistakes a new user makes: each task fails once
    (no retry), with one line naming the problem, and nothing starts or is written."""
    from airflow.sdk import DAG
    from deltalake import write_deltalake

    orders, plain, landing = tmp_path / "orders", tmp_path / "plain", tmp_path / "landing"
    write_deltalake(str(orders), ORDERS)
    plain.mkdir()
    pq.write_table(ORDERS, plain / "part-0.parquet")
    landing.mkdir()
    pq.write_table(ORDERS, landing / "2026-05-01.parquet")
    before = _tree(tmp_path)
    fix = {"condition": "status = 'pending' AND updated_at < 30", "updates": {"status": "'expired'"}}
    load = {"source": str(landing / "2026-05-01.parquet"), "source_format": "parquet"}
    merge = {
        "source": str(landing),
        "source_format": "parquet",
        "clauses": json.dumps([{"when": "matched", "update": "*"}]),
    }
    cases = {
        "mistyped_table": (DeltaUpdateOperator, {**fix, "table_path": str(tmp_path / "ordres")}, "TableNotFoundError"),
        "unknown_column": (
            DeltaUpdateOperator,
            {**fix, "table_path": str(orders), "condition": "statuss = 'pending'"},
            "UnresolvedColumnError: invalid condition \"statuss = 'pending'\": [UNRESOLVED_COLUMN.WITH_SUGGESTION]",
        ),
        "unknown_set_column": (
            DeltaUpdateOperator,
            {**fix, "table_path": str(orders), "updates": {"stat": "'expired'"}},
            "UnresolvedColumnError: cannot SET unknown column 'stat'",
        ),
        "unknown_set_expression": (
            DeltaUpdateOperator,
            {**fix, "table_path": str(orders), "updates": {"status": "upper(staus)"}},
            "UnresolvedColumnError: invalid SET expression for status 'upper(staus)'",
        ),
        "update_plain_parquet": (DeltaUpdateOperator, {**fix, "table_path": str(plain)}, "TableNotFoundError"),
        "load_into_plain_parquet": (DeltaAppendOperator, {**load, "table_path": str(plain)}, "UntrackedDataFilesError"),
        "missing_source": (
            DeltaAppendOperator,
            {**load, "table_path": str(orders), "source": str(landing / "2026-05-02.parquet")},
            f"SourceNotFoundError: the source path {landing / '2026-05-02.parquet'} does not exist",
        ),
        "bad_partition_column": (
            DeltaAppendOperator,
            {**load, "table_path": str(orders), "partition_by": ["stauts"]},
            "InvalidInputError: partition columns ['stauts'] do not match the table's []",
        ),
        "unknown_replace_where_column": (
            DeltaAppendOperator,
            {**load, "table_path": str(orders), "mode": "overwrite", "replace_where": "ds = '2026-05-01'"},
            "UnresolvedColumnError: invalid replace_where",
        ),
        "syntax_error": (
            DeltaDeleteOperator,
            {"table_path": str(orders), "condition": "status = 'x' AND AND order_id = 1"},
            "SqlSyntaxError: invalid condition \"status = 'x' AND AND order_id = 1\": "
            "[PARSE_SYNTAX_ERROR] Syntax error at or near 'AND' (line 1, pos 17)",
        ),
        "unknown_merge_on_column": (
            DeltaMergeOperator,
            {**merge, "table_path": str(orders), "on": "t.id = s.order_id"},
            "UnresolvedColumnError: invalid merge condition (on) 't.id = s.order_id'",
        ),
    }
    with DAG("delta_preflight", schedule=None, default_args={"retries": 2, "retry_delay": timedelta(0)}) as dag:
        for task_id, (operator, kwargs, _) in cases.items():
            operator(task_id=task_id, **kwargs)
    dag_run = run_dag(dag)

    assert task_states(dag_run) == dict.fromkeys(cases, "failed")
    assert task_tries(dag_run) == dict.fromkeys(cases, 1)  # a permanent error: no retry
    assert no_spark == []
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    for task_id, (operator, kwargs, expected) in cases.items():
        operation = operator.spec_class.operation
        line = f"Delta {operation} on {kwargs['table_path']} failed: "
        assert log.count(line + expected) == 1, task_id  # once, as the task's error
    assert _tree(tmp_path) == before


def test_over_spark_connect_bad_input_fails_before_the_server_is_asked(tmp_path: Path, monkeypatch) -> None:
    """No server listens on the connection's port: the input's error, not the server's."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_delta_provider.hooks.delta_in_process import DeltaInProcessHook
    from airflow_delta_provider.operations.update.spec import UpdateSpec

    monkeypatch.setenv(
        "AIRFLOW_CONN_NOWHERE", json.dumps({"conn_type": "spark_connect", "host": "127.0.0.1", "port": 9})
    )
    hook = DeltaInProcessHook("nowhere")
    spec = UpdateSpec(table_path=str(tmp_path / "nope"), updates=(("a", "1"),), token="d/t/r/-1")
    with pytest.raises(AirflowFailException, match=r"^Delta update on .*/nope failed: TableNotFoundError: "):
        hook.run_spec(spec)


def test_a_table_by_name_is_bound_once_and_its_bad_column_fails_before_spark(uc_on_azurite, no_spark) -> None:
    """A Unity Catalog name, on a store this process holds no key for: the name is
    resolved and its credentials vended once for the task, pre-flight reads the log
    with them, and an unknown column fails before any Spark starts, nothing written; the error names
    the table by its name, its location after it."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_delta_provider.delta.storage import open_storage
    from airflow_delta_provider.hooks.delta_in_process import DeltaInProcessHook
    from airflow_delta_provider.operations.update.spec import UpdateSpec

    table, proxy = uc_on_azurite, uc_on_azurite["proxy"]
    storage = open_storage(table["location"], table["keyed"])
    before = [m.path for m in storage.list_dir("_delta_log")]
    spec = UpdateSpec(table_path=table["name"], condition="idd = 1", updates=(("id", "2"),), token="d/t/r/-1")
    proxy.paths.clear()

    with pytest.raises(AirflowFailException) as failed:
        DeltaInProcessHook("unused").run_spec(spec)
    # One line naming the table as the user gave it, then its location.
    assert str(failed.value).startswith(
        f"Delta update on {table['name']} ({table['location']}) failed: "
        "UnresolvedColumnError: invalid condition 'idd = 1'"
    )

    assert no_spark == []
    # One lookup of the name and one credentials call: pre-flight reuses the task's binding.
    assert [path.split("/")[-1].split("?")[0] for path in proxy.paths] == [
        table["full_name"],
        "temporary-table-credentials",
    ]
    assert [m.path for m in storage.list_dir("_delta_log")] == before
