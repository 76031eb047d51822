"""A Spark operation's operator whose commit answer is lost, through dag.test().

The fault proxy in front of moto applies the create of the commit file and
resets the connection before the answer (``reset_after``): the writer cannot
know the commit landed, its retry meets ``412``, and it reads the file back.
The operator must report that version (its XCom), the task must succeed on
its first try, and the token must be in exactly one commit.

``make test`` runs a DELETE over the session's Spark Connect server (a
partition predicate: the driver's work, the commit in the task's process);
``FAULTS_ALL=1`` adds an UPDATE through a real spark-submit, whose
executors rewrite data files through the proxy (``io=auto``: arrow).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG, parse_commit
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operators.delta import DeltaDeleteOperator, DeltaUpdateOperator
from tests.airflow_env import SPARK_TEST_CONF, run_dag, task_states, task_tries, xcom
from tests.delta.conftest import create_table, write_data_file
from tests.fault_proxy import COMMITS, Rule

CONN_ID = "lake_faulty"
ENGINES = ["spark_connect", "spark_submit"] if os.environ.get("FAULTS_ALL") == "1" else ["spark_connect"]
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.int64()), ("ds", pa.string())])


@pytest.fixture
def faulty_connection(stoppable_s3, monkeypatch):
    """An ``aws`` connection to a bucket through the fault proxy; no AWS_* variable in the environment."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    conn = {
        "conn_type": "aws",
        "login": stoppable_s3.storage_options["AWS_ACCESS_KEY_ID"],
        "password": stoppable_s3.secret,
        "extra": {"endpoint_url": stoppable_s3.endpoint, "region_name": "us-east-1", "retry_init_backoff": "10ms"},
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
    return stoppable_s3


def _orders(store) -> str:
    """A table partitioned by ``ds`` (d0: ids 0-2, d1: ids 3-5), made through the proxy, no fault yet."""
    uri = store.uri("orders")
    with pytest.MonkeyPatch.context() as env:
        for key, value in store.env.items():
            env.setenv(key, value)
        adds = [
            write_data_file(uri, pa.table({"id": ids, "amount": [i * 10 for i in ids]}), partition_values={"ds": ds})
            for ds, ids in (("d0", [0, 1, 2]), ("d1", [3, 4, 5]))
        ]
        create_table(uri, SCHEMA, partition_columns=["ds"], adds=adds)
    return uri


def _tokens(uri: str, options: dict[str, str]) -> list[tuple[int, str | None]]:
    table = DeltaTable(uri, options)
    out = []
    for f in table.log_store.list_from(0):
        if f.kind == "commit":
            info = next(a for a in parse_commit(table.log_store.read(f.name)) if a.KEY == "commitInfo")
            out.append((f.version, info.raw.get("tags", {}).get(TOKEN_TAG)))
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.usefixtures("airflow_db")
def test_a_lost_commit_answer_is_recognised_by_the_operator(faulty_connection, request, monkeypatch, engine):
    from airflow.sdk import DAG
    from deltalake import DeltaTable as RsTable

    store = faulty_connection
    uri = _orders(store)
    common: dict[str, Any] = {"storage_conn_id": CONN_ID, "conf": SPARK_TEST_CONF}
    if engine == "spark_connect":
        server = request.getfixturevalue("spark_connect")
        conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": server.port}
        monkeypatch.setenv("AIRFLOW_CONN_DELTA_CONNECT", json.dumps(conn))
        common["conn_id"] = "delta_connect"
    with DAG(f"delta_lost_answer_{engine}", schedule=None, default_args={"retries": 1}) as dag:
        if engine == "spark_connect":
            DeltaDeleteOperator(task_id="change", table_path=uri, condition="ds = 'd0'", **common)
        else:
            DeltaUpdateOperator(task_id="change", table_path=uri, updates={"amount": "-amount"}, **common)
    lost = Rule("reset_after", methods=("PUT",), paths=(COMMITS,), schedule=frozenset({1}))
    with store.faults.inject(lost) as hit:
        dag_run = run_dag(dag)

    assert [(i.fault, i.target.rsplit("/", 1)[-1]) for i in hit] == [("reset_after", f"{1:020d}.json")]
    assert task_states(dag_run) == {"change": "success"} and task_tries(dag_run) == {"change": 1}
    assert xcom(dag_run, "change")["version"] == 1
    tokens = _tokens(uri, store.storage_options)
    assert [v for v, _t in tokens] == [0, 1] and tokens[1][1] is not None  # one commit, with the task's token
    rows = RsTable(uri, storage_options=store.storage_options).to_pyarrow_table().to_pylist()
    if engine == "spark_connect":
        assert sorted(r["id"] for r in rows) == [3, 4, 5]
    else:
        assert sorted((r["id"], r["amount"]) for r in rows) == [(i, -i * 10) for i in range(6)]
