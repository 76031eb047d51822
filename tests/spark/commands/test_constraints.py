"""CHECK constraints (``checkConstraints``): added after a check of the rows,
enforced by every write job (APPEND, UPDATE, MERGE), honoured both ways with
delta-rs, dropped."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, InvariantViolationError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.merge.command import run_merge
from airflow_delta_provider.spark.commands.metadata.alter import run_alter
from airflow_delta_provider.spark.commands.update import run_update

from .dml_support import state

POSITIVE = {"add_constraint": {"name": "Amount_Positive", "expression": "amount > 0"}}


def source(tmp_path, name: str, ids: list[int], amounts: list[int | None]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(
        pa.table({"id": pa.array(ids, pa.int64()), "amount": pa.array(amounts, pa.int64())}), folder / "a.parquet"
    )
    return str(folder)


@pytest.fixture
def table(spark, tmp_path) -> str:
    path = str(tmp_path / "t")
    run_append(spark, path, source(tmp_path, "seed", [1, 2, 3], [10, 20, 30]), format="parquet")
    return path


def test_adding_a_constraint_checks_the_rows_then_records_it(spark, table, tmp_path):
    result = run_alter(spark, table, POSITIVE)
    snap = DeltaTable(table).snapshot()
    assert (result.operation, result.version) == ("ADD CONSTRAINT", 1)
    assert snap.metadata.configuration["delta.constraints.amount_positive"] == "amount > 0"
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 3)  # delta-spark's upgrade
    info = DeltaTable(table).history(limit=1)[0]
    assert info["operationParameters"] == {"name": "amount_positive", "expr": "amount > 0"}  # as stored


@pytest.mark.parametrize(
    "change, message",
    [
        ({"add_constraint": {"name": "big", "expression": "amount > 15"}}, r"rows of the table break it, e.g. amount = 10$"),
        ({"add_constraint": {"name": "c", "expression": "nosuch > 0"}}, "nosuch"),
        ({"add_constraint": {"name": "c", "expression": "amount + 1"}}, "not boolean"),
        ({"add_constraint": {"name": "1c", "expression": "amount > 0"}}, "invalid constraint name"),
        ({"drop_constraint": {"name": "missing"}}, "no such constraint"),
    ],
)
def test_bad_constraints_change_nothing(spark, table, change, message):
    before = state(table)
    with pytest.raises(InvalidInputError, match=message):
        run_alter(spark, table, change)
    assert state(table) == before


def test_every_write_enforces_it_and_changes_nothing_when_it_fails(spark, table, tmp_path, duckdb_delta):
    run_alter(spark, table, POSITIVE)
    before = state(table)
    bad = source(tmp_path, "bad", [4, 5], [40, -5])
    with pytest.raises(InvariantViolationError, match=r"CHECK constraint amount_positive \(amount > 0\) violated by row with values: amount = -5"):
        run_append(spark, table, bad, format="parquet")
    with pytest.raises(InvariantViolationError, match="amount = NULL"):  # NULL breaks it, as in delta-spark
        run_append(spark, table, source(tmp_path, "null", [6], [None]), format="parquet")
    with pytest.raises(InvariantViolationError, match="amount = -20"):
        run_update(spark, table, "id = 2", {"amount": "-amount"})
    clauses = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]
    with pytest.raises(InvariantViolationError, match="amount_positive"):
        run_merge(spark, table, bad, "t.id = s.id", clauses)
    assert state(table) == before
    run_append(spark, table, source(tmp_path, "good", [7], [70]), format="parquet")  # a good row lands
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{table}')").fetchone() == (4,)


def test_constraints_are_honoured_both_ways_with_delta_rs(spark, table, tmp_path):
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    run_alter(spark, table, POSITIVE)
    with pytest.raises(Exception, match="failed validation check"):  # delta-rs refuses our constraint
        write_deltalake(table, pa.table({"id": pa.array([9], pa.int64()), "amount": pa.array([-9], pa.int64())}), mode="append")
    RsTable(table).alter.add_constraint({"small": "id < 100"})  # theirs, on our table
    before = state(table)
    with pytest.raises(InvariantViolationError, match="small"):
        run_append(spark, table, source(tmp_path, "big", [500], [1]), format="parquet")
    assert state(table) == before


def test_dropping_it_lets_such_rows_in(spark, table, tmp_path):
    run_alter(spark, table, POSITIVE)
    result = run_alter(spark, table, {"drop_constraint": {"name": "amount_positive"}})
    assert result.operation == "DROP CONSTRAINT"
    assert "delta.constraints.amount_positive" not in DeltaTable(table).snapshot().metadata.configuration
    run_append(spark, table, source(tmp_path, "neg", [8], [-8]), format="parquet")
    again = run_alter(spark, table, {"drop_constraint": {"name": "amount_positive", "if_exists": True}})
    assert again.version is None


def test_a_column_a_constraint_reads_cannot_be_renamed(spark, table):
    run_alter(spark, table, POSITIVE)
    with pytest.raises(InvalidInputError, match=r"CHECK constraint.*amount_positive read it"):
        run_alter(spark, table, {"rename_column": {"column": "amount", "to": "total"}}, enable_column_mapping=True)


def test_constraints_are_not_plain_properties(spark, table):
    with pytest.raises(InvalidInputError, match="add_constraint"):
        run_alter(spark, table, {"set_properties": {"delta.constraints.x": "id > 0"}})


def test_the_cli_starts_spark_only_to_add_one(spark, table, capsys):
    from airflow_delta_provider.spark.cli import main
    from airflow_delta_provider.spark.in_process import InProcessCommand

    started = []

    def factory(conf):
        started.append(conf)
        return spark

    assert main(["alter", table, "--change", json.dumps(POSITIVE)], session_factory=factory) == 0
    assert main(["alter", table, "--change", json.dumps({"drop_constraint": {"name": "amount_positive"}})], session_factory=factory) == 0
    assert len(started) == 1
    with pytest.raises(InvalidInputError, match="needs Spark, not engine=python"):
        InProcessCommand(["alter", table, "--change", json.dumps(POSITIVE)]).run()


def test_a_nondeterministic_constraint_is_refused(spark, table):
    before = state(table)
    with pytest.raises(InvalidInputError, match=r"deterministic.*rand"):
        run_alter(spark, table, {"add_constraint": {"name": "coin", "expression": "rand() > 0.5"}})
    assert state(table) == before
