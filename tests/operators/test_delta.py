"""The Delta operators, each run through dag.test(): with real spark-submit on
local Spark, and over a real Spark Connect server.

A task costs seconds, so one DAG runs every operator in turn, and a second
one checks that a retried task does not commit twice; both run once per mode.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.hooks.delta_spark import application_path
from airflow_delta_provider.operators.delta import (
    DeltaAlterTableOperator,
    DeltaAppendOperator,
    DeltaChangesOperator,
    DeltaCheckpointOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaPurgeDeletionVectorsOperator,
    DeltaRestoreOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from tests.airflow_env import SPARK_TEST_CONF, run_dag, task_states, task_tries, xcom

needs_spark = pytest.mark.skipif(not Path(application_path()).is_file(), reason="the Spark CLI is not there yet")


def test_cli_arguments_follow_the_spark_cli() -> None:
    update = DeltaUpdateOperator(task_id="u", table_path="/t", updates={"a": "a + 1", "b": "'x'"}, condition="c > 1")
    assert update.cli_arguments() == ["--condition", "c > 1", "--set", "a=a + 1", "--set", "b='x'"]
    assert DeltaDeleteOperator(task_id="d", table_path="/t").cli_arguments() == []
    append = DeltaAppendOperator(
        task_id="a",
        table_path="/t",
        source="/s",
        source_format="csv",
        merge_schema=True,
        partition_by=["day"],
        txn_app_id="app",
        txn_version=7,
        options={"header": "true"},
    )
    assert append.cli_arguments() == [
        "--source", "/s", "--format", "csv", "--mode", "append", "--merge-schema",
        "--partition-by", "day", "--txn-app-id", "app", "--txn-version", "7", "--option", "header=true",
    ]  # fmt: skip
    assert DeltaCheckpointOperator(task_id="c", table_path="/t", cleanup_logs=True).cli_arguments() == [
        "--cleanup-logs"
    ]
    vacuum = DeltaVacuumOperator(task_id="v", table_path="/t", retention_hours=0, dry_run=True, retention_check=False)
    assert vacuum.cli_arguments() == ["--retention-hours", "0", "--dry-run", "--no-retention-check"]
    purge = DeltaPurgeDeletionVectorsOperator(task_id="p", table_path="/t", min_deleted_ratio=0.25)
    assert purge.cli_arguments() == ["--purge", "--min-deleted-ratio", "0.25"]
    properties = DeltaAppendOperator(
        task_id="a", table_path="/t", source="/s", table_properties={"delta.enableDeletionVectors": "true"}
    )
    assert properties.cli_arguments()[-2:] == ["--property", "delta.enableDeletionVectors=true"]
    with pytest.raises(ValueError, match="min_deleted_ratio"):
        DeltaPurgeDeletionVectorsOperator(task_id="p", table_path="/t", min_deleted_ratio=1)
    rename = DeltaAlterTableOperator(
        task_id="r", table_path="/t", change={"rename_column": {"column": "a", "to": "b"}}, enable_column_mapping=True
    )
    assert rename.cli_arguments() == [
        "--change", '{"rename_column": {"column": "a", "to": "b"}}', "--enable-column-mapping"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="exactly one"):
        DeltaAlterTableOperator(task_id="r", table_path="/t", change={"drop_columns": ["a"], "set_properties": {}})
    assert DeltaRestoreOperator(task_id="r", table_path="/t", version=3).cli_arguments() == ["--version", "3"]
    merge = DeltaMergeOperator(
        task_id="m",
        table_path="/t",
        source="/s",
        source_format="delta",
        source_version="7",  # as a template renders an upstream version
        on="t.id = s.id",
        clauses=[{"when": "matched", "update": "*"}],
        merge_schema=True,
        options={"k": "v"},
    )
    assert merge.cli_arguments() == [
        "--source", "/s", "--source-format", "delta", "--on", "t.id = s.id",
        "--clauses", '[{"when": "matched", "update": "*"}]', "--target-alias", "t", "--source-alias", "s",
        "--source-version", "7", "--merge-schema", "--option", "k=v",
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"clause 1.*exactly one action"):
        DeltaMergeOperator(task_id="m", table_path="/t", source="/s", on="t.id = s.id", clauses=[{"when": "matched"}])
    with pytest.raises(ValueError, match="source version needs a delta source"):
        DeltaMergeOperator(task_id="m", table_path="/t", source="/s", on="t.id = s.id", clauses="[]", source_version=3)
    templated = DeltaMergeOperator(
        task_id="m", table_path="/t", source="/s", on="t.id = s.id", clauses="{{ params.c }}"
    )
    assert templated.clauses == "{{ params.c }}"  # built: the template is checked once rendered
    optimize = DeltaOptimizeOperator(
        task_id="o", table_path="/t", where="p = 1", target_size=1024, zorder_by=["a", "b"]
    )
    assert optimize.cli_arguments() == ["--where", "p = 1", "--target-size", "1024", "--zorder-by", "a,b"]
    templated = DeltaOptimizeOperator(task_id="o", table_path="/t", zorder_by="a, b")  # as a template renders it
    assert templated.cli_arguments() == ["--zorder-by", "a,b"]
    assert DeltaRestoreOperator(task_id="r", table_path="/t", timestamp="2026-11-26").cli_arguments() == [
        "--timestamp", "2026-11-26"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="exactly one of version, timestamp"):
        DeltaRestoreOperator(task_id="r", table_path="/t")


def test_changes_arguments_follow_the_spark_cli() -> None:
    changes = DeltaChangesOperator(
        task_id="c", table_path="/t", start_version="3", end_version=5, output_path="/o", output_format="json"
    )
    assert changes.cli_arguments() == ["--start", "3", "--end", "5", "--output", "/o", "--output-format", "json"]
    latest = DeltaChangesOperator(task_id="c", table_path="/t", start_version=0, output_path="/o")
    assert latest.cli_arguments() == ["--start", "0", "--output", "/o", "--output-format", "parquet"]
    with pytest.raises(ValueError, match="output_format"):
        DeltaChangesOperator(task_id="c", table_path="/t", start_version=0, output_path="/o", output_format="avro")
    with pytest.raises(ValueError, match="start_version must be a version number, not 'None'"):
        DeltaChangesOperator(task_id="c", table_path="/t", start_version="None", output_path="/o")


def test_changes_take_a_version_range_instead_of_its_bounds() -> None:
    """``version_range`` as assets.version_range returns it, or as a template
    renders it; refused together with the bounds, or when it is no range."""
    given = {"table": "/t", "start_version": 3, "end_version": 5, "event_versions": [5]}
    expected = ["--start", "3", "--end", "5", "--output", "/o", "--output-format", "parquet"]
    for version_range in (given, str(given), json.dumps(given)):
        changes = DeltaChangesOperator(task_id="c", table_path="/t", version_range=version_range, output_path="/o")
        assert changes.cli_arguments() == expected
    assert "version_range" in DeltaChangesOperator.template_fields
    for empty in ("", "None"):
        with pytest.raises(ValueError, match="version_range is empty"):
            DeltaChangesOperator(task_id="c", table_path="/t", version_range=empty, output_path="/o").cli_arguments()
    with pytest.raises(ValueError, match="not both"):
        DeltaChangesOperator(task_id="c", table_path="/t", version_range=given, start_version=3, output_path="/o")
    with pytest.raises(ValueError, match="not both"):
        DeltaChangesOperator(task_id="c", table_path="/t", version_range=given, end_version=5, output_path="/o")
    with pytest.raises(ValueError, match=r"start_version .*or version_range"):
        DeltaChangesOperator(task_id="c", table_path="/t", output_path="/o")
    for wrong in ("[3, 5]", "versions 3 to 5", {"start": 3}):
        with pytest.raises(ValueError, match="version_range must be a mapping"):
            DeltaChangesOperator(task_id="c", table_path="/t", version_range=wrong, output_path="/o").cli_arguments()


@pytest.mark.usefixtures("airflow_db")
def test_changes_of_an_empty_version_range_write_nothing(tmp_path: Path) -> None:
    """A range task that found nothing new returns None: the operator reads
    nothing, writes no folder, starts no Spark, and succeeds saying so."""
    from airflow.sdk import DAG, task

    with DAG("delta_changes_empty_range", schedule=None, default_args={"retries": 0}) as dag:

        @task
        def nothing_new() -> None:
            return None

        DeltaChangesOperator(
            task_id="changes",
            table_path=str(tmp_path / "missing-table"),
            version_range=nothing_new(),
            output_path=str(tmp_path / "out"),
            conn_id="no_such_spark",
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"nothing_new": "success", "changes": "success"}
    assert xcom(dag_run, "changes") == {
        "table": str(tmp_path / "missing-table"),
        "version": None,
        "operation": "CHANGES",
        "metrics": {},
    }
    assert xcom(dag_run, "changes", key="version") is None
    assert not (tmp_path / "out").exists()


class _LostDriverOutput(DeltaChangesOperator):
    """As in cluster deploy mode: the driver's printed result never comes back."""

    @property
    def hook(self):
        hook = super().hook
        run = hook._execute_spec
        hook._execute_spec = lambda spec: run(spec) and None
        return hook


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_changes_through_dag_test(tmp_path: Path, engine: dict[str, Any]) -> None:
    """DeltaChangesOperator writes a range's changes and returns the rows per
    change type, also when the driver's output is lost (read back from the
    output folder), and takes the range from an upstream task."""
    from airflow.sdk import DAG, task
    from deltalake import DeltaTable as ReaderTable
    from deltalake import write_deltalake

    table = str(tmp_path / "table")
    write_deltalake(
        table, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), configuration={"delta.enableChangeDataFeed": "true"}
    )
    ReaderTable(table).update({"id": "id + 10"}, predicate="id = 1")  # version 1, with delta-rs's cdc files
    common = {"conf": SPARK_TEST_CONF, **engine["kwargs"]}
    with DAG("delta_changes" + engine["name"], schedule=None, default_args={"retries": 0}) as dag:
        DeltaChangesOperator(
            task_id="all", table_path=table, start_version=0, output_path=str(tmp_path / "all"), **common
        )

        @task
        def plan() -> dict[str, Any]:
            return {"table": table, "start_version": 1, "end_version": 1, "event_versions": [1]}

        _LostDriverOutput(
            task_id="lost",
            table_path=table,
            version_range=plan(),  # an XComArg, as assets.version_range's task gives it
            output_path=str(tmp_path / "lost"),
            output_format="json",
            **common,
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"all": "success", "plan": "success", "lost": "success"}
    every = xcom(dag_run, "all")
    assert (every["operation"], every["version"], every["metrics"]["startVersion"]) == ("CHANGES", 1, 0)
    assert every["metrics"]["changes"] == {"insert": 3, "delete": 0, "update_preimage": 1, "update_postimage": 1}
    assert xcom(dag_run, "all", key="version") == 1
    assert pq.read_table(tmp_path / "all").num_rows == 5
    lost = xcom(dag_run, "lost")
    assert (lost["version"], lost["metrics"]["changes"]["update_postimage"]) == (1, 1)
    assert lost["metrics"]["numOutputRows"] == 2 and xcom(dag_run, "lost", key="version") == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"source_format": "avro"},
        {"mode": "upsert"},
        {"txn_app_id": "only-the-id"},
        {"partition_by": ["day"], "cluster_by": "id"},
    ],
)
def test_append_refuses_bad_static_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        DeltaAppendOperator(task_id="a", table_path="/t", source="/s", **kwargs)


def test_clustering_arguments_follow_the_spark_cli() -> None:
    append = DeltaAppendOperator(task_id="a", table_path="/t", source="/s", cluster_by="x, y")
    assert append.cli_arguments()[-2:] == ["--cluster-by", "x,y"]
    optimize = DeltaOptimizeOperator(task_id="o", table_path="/t", full=True)
    assert optimize.cli_arguments() == ["--full"]
    alter = DeltaAlterTableOperator(task_id="c", table_path="/t", change={"cluster_by": "none"})
    assert alter.cli_arguments() == ["--change", '{"cluster_by": "none"}']


def test_update_needs_a_column_to_set() -> None:
    with pytest.raises(ValueError, match="updates"):
        DeltaUpdateOperator(task_id="u", table_path="/t", updates={})


def _commits_with_token(table: Path, token: str) -> list[int]:
    versions = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            info = json.loads(line).get("commitInfo")
            if info and (info.get("tags") or {}).get(TOKEN_TAG) == token:
                versions.append(int(commit.stem))
    return versions


@pytest.fixture(params=["spark_submit", "spark_connect"])
def engine(request, monkeypatch) -> dict[str, Any]:
    """How the operators reach Spark: the ``spark`` connection (spark-submit), or
    a ``spark_connect`` connection to the session's Connect server."""
    if request.param == "spark_submit":
        return {"name": "", "kwargs": {}}
    server = request.getfixturevalue("spark_connect")
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": server.port}
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_CONNECT", json.dumps(conn))
    return {"name": "_connect", "kwargs": {"conn_id": "delta_connect"}}


@needs_spark
@pytest.mark.usefixtures("airflow_db")
# Over Connect only: seventeen spark-submits cost CI minutes, and the spark-submit path is one codec for
# every operator (test_cli_arguments_follow_the_spark_cli); the tests around run it for real.
@pytest.mark.parametrize("engine", ["spark_connect"], indirect=True)
def test_every_operator_through_dag_test(tmp_path: Path, engine: dict[str, Any]) -> None:
    from airflow.sdk import DAG
    from deltalake import DeltaTable as ReaderTable

    first = tmp_path / "first.parquet"
    pq.write_table(
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([10, 20, 30], pa.int64())}), first
    )
    wider = tmp_path / "wider.parquet"
    pq.write_table(
        pa.table({"id": pa.array([4], pa.int64()), "amount": pa.array([40], pa.int64()), "country": ["NL"]}), wider
    )
    upserts = tmp_path / "upserts.parquet"
    pq.write_table(
        pa.table(
            {"id": pa.array([4, 9], pa.int64()), "total": pa.array([400, 900], pa.int64()), "country": ["NL", "BE"]}
        ),
        upserts,
    )
    clashing = tmp_path / "clashing.parquet"
    pq.write_table(pa.table({"id": pa.array([5], pa.int64()), "amount": ["fifty"]}), clashing)
    table = tmp_path / "table"

    common = {"conf": SPARK_TEST_CONF, **engine["kwargs"]}
    dag_id = "delta_operators" + engine["name"]
    with DAG(
        dag_id,
        schedule=None,
        params={"country": "NL", "table": str(table)},
        default_args={"retries": 0},
    ) as dag:
        create = DeltaAppendOperator(
            task_id="create",
            table_path="{{ params.table }}",
            source=str(first),
            txn_app_id="daily_load",
            txn_version="{{ logical_date.strftime('%Y%m%d') | int }}",  # as docs/operators.rst prints it
            **common,
        )
        evolve = DeltaAppendOperator(
            task_id="evolve", table_path=str(table), source=str(wider), merge_schema=True, **common
        )
        update = DeltaUpdateOperator(
            task_id="update",
            table_path=str(table),
            updates={"amount": "amount * {{ ti.xcom_pull(task_ids='evolve', key='version') + 1 }}"},
            condition="country = '{{ params.country }}' OR id = 2",
            **common,
        )
        delete = DeltaDeleteOperator(task_id="delete", table_path=str(table), condition="id = 1", **common)
        no_match = DeltaDeleteOperator(task_id="no_match", table_path=str(table), condition="id > 1000", **common)
        checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table_path=str(table), **common)
        python_checkpoint = DeltaCheckpointOperator(
            task_id="python_checkpoint", table_path=str(table), engine="python", cleanup_logs=True
        )
        vacuum = DeltaVacuumOperator(
            task_id="vacuum", table_path=str(table), retention_hours=0, retention_check=False, dry_run=True, **common
        )
        enable_dvs = DeltaAppendOperator(
            task_id="enable_dvs",
            table_path=str(table),
            source=str(first),
            table_properties={"delta.enableDeletionVectors": "true"},
            **common,
        )
        dv_delete = DeltaDeleteOperator(task_id="dv_delete", table_path=str(table), condition="id = 3", **common)
        purge = DeltaPurgeDeletionVectorsOperator(task_id="purge", table_path=str(table), **common)
        rename = DeltaAlterTableOperator(
            task_id="rename",
            table_path=str(table),
            change={"rename_column": {"column": "amount", "to": "total"}},
            enable_column_mapping=True,
            **common,
        )
        after_rename = DeltaUpdateOperator(
            task_id="after_rename", table_path=str(table), updates={"total": "total + 1"}, condition="id = 4", **common
        )
        restore = DeltaRestoreOperator(
            task_id="restore",
            table_path=str(table),
            version="{{ ti.xcom_pull(task_ids='rename', key='version') }}",  # undo after_rename
            **common,
        )
        optimize = DeltaOptimizeOperator(task_id="optimize", table_path=str(table), **common)
        upsert = DeltaMergeOperator(
            task_id="upsert",
            table_path=str(table),
            source=str(upserts),
            on="t.id = s.id",
            clauses=[{"when": "matched", "update": {"total": "s.total"}}, {"when": "not_matched", "insert": "*"}],
            **common,
        )
        refused = DeltaAppendOperator(task_id="refused", table_path=str(table), source=str(clashing), **common)
        create >> evolve >> update >> delete >> no_match >> checkpoint >> python_checkpoint >> vacuum >> enable_dvs
        enable_dvs >> dv_delete >> purge
        purge >> rename >> after_rename >> restore >> optimize >> upsert >> refused

    dag_run = run_dag(dag)

    succeeded = (
        "create", "evolve", "update", "delete", "no_match", "checkpoint", "python_checkpoint", "vacuum", "enable_dvs",
        "dv_delete", "purge", "rename", "after_rename", "restore", "optimize", "upsert",
    )  # fmt: skip
    assert task_states(dag_run) == {**{t: "success" for t in succeeded}, "refused": "failed"}
    created = xcom(dag_run, "create")
    assert created == {"table": str(table), "version": 0, "operation": "WRITE", "metrics": created["metrics"]}
    assert created["metrics"]["numOutputRows"] == 3
    from airflow_delta_provider.delta.table import DeltaTable

    logical_day = int(dag_run.logical_date.strftime("%Y%m%d"))
    assert DeltaTable(table).snapshot(version=0).txn_version("daily_load") == logical_day
    assert xcom(dag_run, "evolve")["version"] == 1
    updated = xcom(dag_run, "update")
    assert (updated["version"], updated["operation"], updated["metrics"]["numUpdatedRows"]) == (2, "UPDATE", 2)
    deleted = xcom(dag_run, "delete")
    assert (deleted["version"], deleted["operation"], deleted["metrics"]["numDeletedRows"]) == (3, "DELETE", 1)
    assert xcom(dag_run, "no_match")["version"] is None
    assert xcom(dag_run, "checkpoint")["version"] == 3
    python_checkpoint = xcom(dag_run, "python_checkpoint")
    assert (python_checkpoint["operation"], python_checkpoint["version"]) == ("CHECKPOINT", 3)
    assert python_checkpoint["metrics"]["numDeletedLogFiles"] == 0  # nothing older than the log retention
    assert xcom(dag_run, "vacuum")["version"] is None
    for task_id, version in {"create": 0, "evolve": 1, "update": 2, "delete": 3, "no_match": None}.items():
        assert xcom(dag_run, task_id, key="version") == version

    reader = ReaderTable(str(table), version=3)
    rows = sorted(reader.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 2, "amount": 40, "country": None},
        {"id": 3, "amount": 30, "country": None},
        {"id": 4, "amount": 80, "country": "NL"},
    ]
    assert (table / "_delta_log" / f"{3:020d}.checkpoint.parquet").is_file()
    token = f"{dag_id}/update/{dag_run.run_id}/-1"
    assert _commits_with_token(table, token) == [2]

    # Deletion vectors: enabled by a table property, written by DELETE, purged by REORG.
    assert xcom(dag_run, "enable_dvs")["version"] == 4
    dv_deleted = xcom(dag_run, "dv_delete")
    assert (dv_deleted["version"], dv_deleted["metrics"]["numDeletedRows"]) == (5, 2)
    assert dv_deleted["metrics"]["numDeletionVectorsAdded"] >= 1 and dv_deleted["metrics"]["numAddedFiles"] == 0
    purged = xcom(dag_run, "purge")
    assert (purged["version"], purged["operation"]) == (6, "REORG")
    from deltalake import QueryBuilder

    latest = ReaderTable(str(table))
    assert latest.protocol().min_writer_version == 7
    now = pa.table(
        QueryBuilder().register("t", ReaderTable(str(table), version=6)).execute("SELECT id, amount FROM t").read_all()
    ).to_pylist()
    assert sorted((r["id"], r["amount"]) for r in now) == [(1, 10), (2, 20), (2, 40), (4, 80)]

    # A column renamed through column mapping, then updated by its new name.
    renamed = xcom(dag_run, "rename")
    assert (renamed["version"], renamed["operation"]) == (7, "RENAME COLUMN")
    assert xcom(dag_run, "after_rename")["version"] == 8
    latest = ReaderTable(str(table))
    assert "columnMapping" in latest.protocol().reader_features
    at_8 = ReaderTable(str(table), version=8)
    now = pa.table(QueryBuilder().register("t", at_8).execute("SELECT id, total FROM t").read_all()).to_pylist()
    assert sorted((r["id"], r["total"]) for r in now) == [(1, 10), (2, 20), (2, 40), (4, 81)]

    # RESTORE to the rename's version, templated from its XCom: the +1 is undone.
    restored = xcom(dag_run, "restore")
    assert (restored["version"], restored["operation"]) == (9, "RESTORE")
    assert restored["metrics"]["numRestoredFiles"] == restored["metrics"]["numRemovedFiles"] == 1
    at_9 = ReaderTable(str(table), version=9)
    now = pa.table(QueryBuilder().register("t", at_9).execute("SELECT id, total FROM t").read_all()).to_pylist()
    assert sorted((r["id"], r["total"]) for r in now) == [(1, 10), (2, 20), (2, 40), (4, 80)]

    # OPTIMIZE compacts the files of version 9 into one, rows unchanged.
    optimized = xcom(dag_run, "optimize")
    assert (optimized["version"], optimized["operation"]) == (10, "OPTIMIZE")
    assert optimized["metrics"]["numRemovedFiles"] == len(at_9.file_uris()) > 1
    at_10 = ReaderTable(str(table), version=10)
    assert len(at_10.file_uris()) == 1
    now = pa.table(QueryBuilder().register("t", at_10).execute("SELECT id, total FROM t").read_all()).to_pylist()
    assert sorted((r["id"], r["total"]) for r in now) == [(1, 10), (2, 20), (2, 40), (4, 80)]

    # MERGE: id 4 updated, id 9 inserted, on the column-mapped table.
    upserted = xcom(dag_run, "upsert")
    assert (upserted["version"], upserted["operation"]) == (11, "MERGE")
    assert (upserted["metrics"]["numTargetRowsUpdated"], upserted["metrics"]["numTargetRowsInserted"]) == (1, 1)
    now = pa.table(QueryBuilder().register("t", latest).execute("SELECT id, total, country FROM t").read_all())
    assert sorted((r["id"], r["total"], r["country"]) for r in now.to_pylist()) == [
        (1, 10, None), (2, 20, None), (2, 40, None), (4, 400, "NL"), (9, 900, "BE"),
    ]  # fmt: skip


class _LostAfterTheCommit:
    """Commits, then fails its first try: a worker lost right after the commit."""

    def execute(self, context: Any) -> Any:
        result = super().execute(context)  # type: ignore[misc]
        if context["ti"].try_number == 1:
            raise RuntimeError("worker lost after the commit")
        return result


class _FailsAfterCommitting(_LostAfterTheCommit, DeltaDeleteOperator):
    pass


class _RestoreFailsAfterCommitting(_LostAfterTheCommit, DeltaRestoreOperator):
    pass


class _OptimizeFailsAfterCommitting(_LostAfterTheCommit, DeltaOptimizeOperator):
    pass


class _MergeFailsAfterCommitting(_LostAfterTheCommit, DeltaMergeOperator):
    pass


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_a_retry_after_a_committed_try_returns_that_commit(tmp_path: Path, engine: dict[str, Any]) -> None:
    from airflow.sdk import DAG

    from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook

    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), source)
    table = tmp_path / "table"
    DeltaSparkHook(conf=SPARK_TEST_CONF).run("append", str(table), ["--source", str(source), "--format", "parquet"])

    dag_id = "delta_retry" + engine["name"]
    with DAG(dag_id, schedule=None) as dag:
        _FailsAfterCommitting(
            task_id="delete",
            table_path=str(table),
            condition="id = 2",
            conf=SPARK_TEST_CONF,
            retries=1,
            retry_delay=timedelta(0),
            **engine["kwargs"],
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"delete": "success"}
    assert xcom(dag_run, "delete")["version"] == 1
    assert xcom(dag_run, "delete", key="version") == 1
    assert _commits_with_token(table, f"{dag_id}/delete/{dag_run.run_id}/-1") == [1]
    assert sorted(p.name for p in (table / "_delta_log").glob("*.json")) == [f"{v:020d}.json" for v in (0, 1)]


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_bad_input_leaves_one_clear_line_in_the_task_log(
    tmp_path: Path, engine: dict[str, Any], capfd: Any, caplog: Any
) -> None:
    """An UPDATE with an unknown column, as a new user would write it: the task
    fails with one line that names the column and the ones there are, and the
    log holds no JVM stack (PySpark's SQLQueryContextLogger record)."""
    from airflow.sdk import DAG
    from deltalake import write_deltalake

    table = tmp_path / "orders"
    orders = pa.table({"order_id": pa.array([1, 2], pa.int64()), "amount": pa.array([5, 9], pa.int64())})
    write_deltalake(str(table), orders)
    with DAG("delta_bad_input" + engine["name"], schedule=None) as dag:
        DeltaUpdateOperator(
            task_id="update",
            table_path=str(table),
            condition="nosuchcol > 3",
            updates={"amount": "0"},
            conf=SPARK_TEST_CONF,
            **engine["kwargs"],
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"update": "failed"}
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    assert f"Delta update on {table} failed: UnresolvedColumnError: invalid condition 'nosuchcol > 3'" in log
    assert "Did you mean one of the following? [`amount`, `order_id`]" in log
    assert "SQLQueryContextLogger" not in log
    assert "JVM stacktrace" not in log and "\tat org.apache.spark" not in log
    # The error once, as the task's error: no spark-submit command, no chained
    # traceback, no Spark INFO lines.
    assert log.count("invalid condition 'nosuchcol > 3'") == 1
    assert "Cannot execute" not in log and "Spark-Submit cmd" not in log and "Last spark-submit output" not in log
    assert "The above exception was the direct cause" not in log and " INFO SparkContext" not in log
    assert sorted(p.name for p in (table / "_delta_log").glob("*.json")) == [f"{0:020d}.json"]


#: A line of Spark's own log at INFO, as log4j's console layout writes it.
SPARK_INFO_LINE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ")
#: The Spark application's progress line (airflow_delta_provider.spark.runtime.progress).
PROGRESS_LINE = re.compile(r"progress: stages? \d+.*, \d+/\d+ tasks, \d+:\d\d:\d\d")


def _orders(table: Path, rows: int) -> None:
    """A table of ``rows`` orders in four files."""
    from deltalake import write_deltalake

    for part in range(4):
        ids = range(part * rows // 4, (part + 1) * rows // 4)
        write_deltalake(str(table), pa.table({"id": pa.array(ids, pa.int64()), "amount": pa.array(ids)}), mode="append")


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_a_long_update_logs_progress_lines_and_no_spark_info(
    tmp_path: Path, engine: dict[str, Any], capfd: Any, caplog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An UPDATE whose jobs run longer than the progress interval (lowered to
    half a second; each row's condition sleeps 20 ms): its task log holds
    progress lines, and not one of Spark's INFO records.

    The interval reaches spark-submit's driver through ``env_vars``, and the
    task's own process (the Spark Connect client) through its environment.
    """
    from airflow.sdk import DAG

    from airflow_delta_provider.spark.runtime.progress import PROGRESS_INTERVAL_VARIABLE

    table = tmp_path / "orders"
    _orders(table, rows=100)
    monkeypatch.setenv(PROGRESS_INTERVAL_VARIABLE, "0.5")
    slow = "id >= 0 AND java_method('java.lang.Thread', 'sleep', cast(20 as bigint)) = 'null'"
    with DAG("delta_progress" + engine["name"], schedule=None) as dag:
        DeltaUpdateOperator(
            task_id="update",
            table_path=str(table),
            condition=slow,
            updates={"amount": "amount + 1"},
            # The Connect server's progress reports, every 200 ms (spark-submit has no use for it).
            conf={**SPARK_TEST_CONF, "spark.connect.progress.reportInterval": "200ms"},
            env_vars={PROGRESS_INTERVAL_VARIABLE: "0.5"},
            **engine["kwargs"],
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"update": "success"}
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    print(f"task log: {len(log.splitlines())} lines")
    assert PROGRESS_LINE.search(log), "no progress line for an UPDATE longer than the interval"
    assert not SPARK_INFO_LINE.search(log)
    assert xcom(dag_run, "update")["metrics"]["numUpdatedRows"] == 100


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_debug_brings_sparks_info_lines_back_to_the_task_log(tmp_path: Path, capfd: Any, caplog: Any) -> None:
    """The same UPDATE through spark-submit with ``debug=True``: Spark's INFO records are in the task log."""
    from airflow.sdk import DAG

    table = tmp_path / "orders"
    _orders(table, rows=8)
    with DAG("delta_debug_log", schedule=None) as dag:
        DeltaUpdateOperator(
            task_id="update", table_path=str(table), updates={"amount": "amount + 1"}, conf=SPARK_TEST_CONF, debug=True
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"update": "success"}
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    print(f"task log: {len(log.splitlines())} lines")
    assert SPARK_INFO_LINE.search(log) and " INFO SparkContext: " in log


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_a_task_whose_connect_server_dies_mid_write_fails_clearly_and_changes_nothing(
    tmp_path: Path, fresh_spark_connect: Any, monkeypatch: pytest.MonkeyPatch, capfd: Any, caplog: Any
) -> None:
    """The server is killed while the UPDATE writes its files (its staging
    folder has appeared): the task fails with EngineUnavailableError, not
    for good (a retry may find the server back), and the table is as it was."""
    import threading
    import time

    from airflow.sdk import DAG
    from deltalake import write_deltalake

    server = fresh_spark_connect()
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": server.port}
    monkeypatch.setenv("AIRFLOW_CONN_DYING_CONNECT", json.dumps(conn))
    table = tmp_path / "orders"
    write_deltalake(str(table), pa.table({"id": pa.array(range(200), pa.int64()), "amount": pa.array(range(200))}))
    files_before = sorted(p.name for p in table.iterdir())
    slow = "id >= 0 AND java_method('java.lang.Thread', 'sleep', cast(50 as bigint)) = 'null'"

    def kill_once_writing() -> None:
        deadline = time.monotonic() + 120
        while not any(table.glob("_delta_staging_*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        server.kill()

    killer = threading.Thread(target=kill_once_writing)
    killer.start()
    with DAG("delta_connect_dies", schedule=None) as dag:
        DeltaUpdateOperator(
            task_id="update", table_path=str(table), condition=slow, updates={"amount": "0"}, conn_id="dying_connect"
        )
    dag_run = run_dag(dag)
    killer.join()

    assert task_states(dag_run) == {"update": "failed"}
    assert sorted(p.name for p in table.iterdir()) == files_before  # no data file, no staging folder left
    assert sorted(p.name for p in (table / "_delta_log").glob("*.json")) == [f"{0:020d}.json"]
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    assert f"Delta update on {table} failed: EngineUnavailableError: the Spark Connect server went away" in log
    assert "AirflowFailException:" not in log  # retryable (a traceback may quote the name in source, not raise it)
    assert "airflow.sdk.exceptions.AirflowException: Delta update on" in log


def test_the_connection_type_picks_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_delta_provider.hooks.delta_in_process import DeltaInProcessHook
    from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook

    monkeypatch.setenv("AIRFLOW_CONN_SOME_CONNECT", json.dumps({"conn_type": "spark_connect", "host": "h", "port": 1}))
    connect = DeltaCheckpointOperator(task_id="c", table_path="/t", conn_id="some_connect", executor_memory="2g")
    assert isinstance(connect.hook, DeltaInProcessHook) and connect.hook.conn_id == "some_connect"
    python = DeltaCheckpointOperator(task_id="p", table_path="/t", engine="python", conn_id="some_connect")
    assert isinstance(python.hook, DeltaInProcessHook) and python.hook.conn_id is None
    assert isinstance(DeltaCheckpointOperator(task_id="s", table_path="/t").hook, DeltaSparkHook)
    # A connection defined nowhere: spark-submit, with SparkSubmitHook's own defaults, as before.
    undefined = DeltaCheckpointOperator(task_id="u", table_path="/t", conn_id="defined_nowhere")
    assert isinstance(undefined.hook, DeltaSparkHook)
    with pytest.raises(ValueError, match="update needs Spark"):
        DeltaUpdateOperator(task_id="x", table_path="/t", updates={"a": "1"}, engine="python")


@pytest.mark.usefixtures("airflow_db")
def test_a_restore_retried_after_its_commit_returns_that_commit(tmp_path: Path) -> None:
    """RESTORE with no Spark (``engine="python"``): the retry finds its commit and restores nothing twice."""
    from airflow.sdk import DAG
    from deltalake import DeltaTable as ReaderTable
    from deltalake import write_deltalake

    table = tmp_path / "table"
    for ids in ([1, 2], [3]):
        write_deltalake(str(table), pa.table({"id": pa.array(ids, pa.int64())}), mode="append")
    with DAG("delta_restore_retry", schedule=None) as dag:
        _RestoreFailsAfterCommitting(
            task_id="restore", table_path=str(table), version=0, engine="python", retries=1, retry_delay=timedelta(0)
        )
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"restore": "success"}
    assert xcom(dag_run, "restore")["version"] == 2
    assert _commits_with_token(table, f"delta_restore_retry/restore/{dag_run.run_id}/-1") == [2]
    assert ReaderTable(str(table)).version() == 2
    assert sorted(ReaderTable(str(table)).to_pyarrow_table()["id"].to_pylist()) == [1, 2]


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_an_optimize_and_a_merge_retried_after_their_commits_return_them(
    tmp_path: Path, engine: dict[str, Any]
) -> None:
    from airflow.sdk import DAG
    from deltalake import DeltaTable as ReaderTable
    from deltalake import write_deltalake

    table = tmp_path / "table"
    for ids in ([1, 2], [3], [4]):
        write_deltalake(str(table), pa.table({"id": pa.array(ids, pa.int64())}), mode="append")
    upserts = tmp_path / "upserts.parquet"
    pq.write_table(pa.table({"id": pa.array([4, 5], pa.int64())}), upserts)
    dag_id = "delta_optimize_retry" + engine["name"]
    retried = {"conf": SPARK_TEST_CONF, "retries": 1, "retry_delay": timedelta(0), **engine["kwargs"]}
    with DAG(dag_id, schedule=None) as dag:
        optimize = _OptimizeFailsAfterCommitting(task_id="optimize", table_path=str(table), **retried)
        merge = _MergeFailsAfterCommitting(
            task_id="merge",
            table_path=str(table),
            source=str(upserts),
            on="t.id = s.id",
            clauses=[{"when": "not_matched", "insert": "*"}],
            **retried,
        )
        optimize >> merge
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"optimize": "success", "merge": "success"}
    assert xcom(dag_run, "optimize")["version"] == 3
    assert _commits_with_token(table, f"{dag_id}/optimize/{dag_run.run_id}/-1") == [3]
    merged = xcom(dag_run, "merge")
    assert (merged["version"], merged["operation"], merged["metrics"]["numTargetRowsInserted"]) == (4, "MERGE", 1)
    assert _commits_with_token(table, f"{dag_id}/merge/{dag_run.run_id}/-1") == [4]
    assert ReaderTable(str(table)).version() == 4
    assert sorted(ReaderTable(str(table)).to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3, 4, 5]


def test_adding_a_constraint_needs_spark() -> None:
    add = {"add_constraint": {"name": "positive", "expression": "amount > 0"}}
    operator = DeltaAlterTableOperator(task_id="c", table_path="/t", change=add)
    assert operator.cli_arguments() == ["--change", json.dumps(add)]
    with pytest.raises(ValueError, match="needs Spark"):
        DeltaAlterTableOperator(task_id="c", table_path="/t", change=add, engine="python")
    drop = DeltaAlterTableOperator(
        task_id="d", table_path="/t", change={"drop_constraint": {"name": "positive"}}, engine="python"
    )
    assert drop.engine == "python"


def test_the_alter_operator_drops_a_feature_by_name() -> None:
    drop = DeltaAlterTableOperator(
        task_id="d", table_path="/t", drop_feature="v2Checkpoint", truncate_history=True, engine="python"
    )
    assert drop.cli_arguments() == ["--drop-feature", "v2Checkpoint", "--truncate-history"]
    with pytest.raises(ValueError, match="exactly one of change, drop_feature"):
        DeltaAlterTableOperator(task_id="d", table_path="/t")
    with pytest.raises(ValueError, match="exactly one of change, drop_feature"):
        DeltaAlterTableOperator(task_id="d", table_path="/t", change={"cluster_by": "none"}, drop_feature="x")
    with pytest.raises(ValueError, match=r"truncate_history goes with drop_feature .*own key"):
        DeltaAlterTableOperator(task_id="d", table_path="/t", change={"cluster_by": "none"}, truncate_history=True)
    for rewriting in ({"drop_feature": "deletionVectors"}, {"change": {"drop_feature": {"name": "typeWidening"}}}):
        with pytest.raises(ValueError, match="rewrites data files: it needs Spark"):
            DeltaAlterTableOperator(task_id="d", table_path="/t", engine="python", **rewriting)
    # JSON text, a template of it too, is passed on as it is; the command checks it when the task runs.
    templated = DeltaAlterTableOperator(task_id="d", table_path="/t", change="{{ params.change }}")
    templated.change = '{"set_properties": {"k": "v"}}'  # as rendered
    assert templated.cli_arguments() == ["--change", '{"set_properties": {"k": "v"}}']


def test_append_operator_passes_a_declared_table_schema():
    """``table_schema`` reaches the application as ``--table-schema`` JSON,
    which its parser takes back (generated and identity columns on create)."""
    from airflow_delta_provider.spark.cli import build_parser

    declared = {
        "type": "struct",
        "fields": [
            {
                "name": "id",
                "type": "long",
                "nullable": True,
                "metadata": {"delta.identity.start": 1, "delta.identity.step": 1},
            },
            {
                "name": "d",
                "type": "date",
                "nullable": True,
                "metadata": {"delta.generationExpression": "CAST(ts AS DATE)"},
            },
        ],
    }
    op = DeltaAppendOperator(task_id="a", table_path="/t", source="/s", table_schema=declared)
    argv = op.cli_arguments()
    assert json.loads(argv[argv.index("--table-schema") + 1]) == declared
    assert json.loads(build_parser().parse_args(["append", "/t", *argv]).table_schema) == declared
    assert "--table-schema" not in DeltaAppendOperator(task_id="b", table_path="/t", source="/s").cli_arguments()


@pytest.mark.usefixtures("airflow_db")
def test_an_operation_that_commits_nothing_logs_what_it_found(tmp_path: Path, capfd: Any, caplog: Any) -> None:
    """A VACUUM dry run commits no version; its file count and bytes are in the task log, not only in XCom."""
    from airflow.sdk import DAG
    from deltalake import write_deltalake

    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"id": [1, 2]}))
    write_deltalake(str(table), pa.table({"id": [3]}), mode="overwrite")
    with DAG("delta_dry_run_log", schedule=None) as dag:
        DeltaVacuumOperator(
            task_id="vacuum", table_path=str(table), retention_hours=0, retention_check=False, dry_run=True,
            engine="python",
        )  # fmt: skip
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"vacuum": "success"}
    found = xcom(dag_run, "vacuum")
    assert found["version"] is None and found["metrics"]["numFilesToDelete"] == 1
    printed = capfd.readouterr()
    log = printed.out + printed.err + caplog.text
    assert f"VACUUM committed no version of {table}: {found['metrics']}" in log


@pytest.mark.usefixtures("airflow_db")
def test_a_missing_table_fails_at_once_without_a_retry(tmp_path: Path) -> None:
    """A mistyped table_path is bad input: no retry creates the table, so none is spent."""
    from airflow.sdk import DAG

    with DAG("delta_missing_table", schedule=None) as dag:
        DeltaCheckpointOperator(
            task_id="checkpoint", table_path=str(tmp_path / "no_such_table"), engine="python", retries=3,
            retry_delay=timedelta(0),
        )  # fmt: skip
    dag_run = run_dag(dag)

    assert task_states(dag_run) == {"checkpoint": "failed"}
    assert task_tries(dag_run) == {"checkpoint": 1}  # no retry spent
    assert not (tmp_path / "no_such_table").exists()


class _ReloadFailsAfterCommitting(_LostAfterTheCommit, DeltaAppendOperator):
    pass


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_a_reload_retried_after_its_commit_commits_once(tmp_path: Path) -> None:
    """An interval reload with replace_where whose try is lost after its commit:
    the retry returns that commit and commits nothing more. (Rerunning a day is
    tests/dags_examples' daily reload.)"""
    import pendulum
    from airflow.sdk import DAG
    from deltalake import DeltaTable as ReaderTable
    from deltalake import write_deltalake

    table = tmp_path / "events"
    days = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ds": ["2026-05-03", "2026-05-04", "2026-05-05"]})
    write_deltalake(str(table), days, partition_by=["ds"])
    landing = tmp_path / "landing" / "2026-05-04"
    landing.mkdir(parents=True)
    day = pa.table({"id": pa.array([20, 21], pa.int64()), "ds": ["2026-05-04", "2026-05-04"]})
    pq.write_table(day, landing / "part-0.parquet")

    with DAG("delta_reload_retry", schedule=None) as dag:
        _ReloadFailsAfterCommitting(
            task_id="reload", table_path=str(table), source=str(tmp_path / "landing" / "{{ ds }}"),
            mode="overwrite", replace_where="ds = '{{ ds }}'", conf=SPARK_TEST_CONF, retries=1,
            retry_delay=timedelta(0),
        )  # fmt: skip
    dag_run = run_dag(dag, logical_date=pendulum.datetime(2026, 5, 4, tz="UTC"))

    assert task_states(dag_run) == {"reload": "success"} and task_tries(dag_run) == {"reload": 2}
    assert xcom(dag_run, "reload")["version"] == 1
    assert ReaderTable(str(table)).version() == 1  # one commit, though two tries
    rows = ReaderTable(str(table)).to_pyarrow_table(columns=["id", "ds"]).to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == [
        (1, "2026-05-03"),
        (3, "2026-05-05"),
        (20, "2026-05-04"),
        (21, "2026-05-04"),
    ]
