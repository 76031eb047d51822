"""Issue 44's repro: a table Databricks Runtime 13.3 wrote (delta-rs's test
table ``table_with_column_mapping``: column mapping ``name``, physical names
``col-<uuid>``, partitioned by ``Company Very Short``, with
``delta.autoOptimize.optimizeWrite`` and ``delta.targetFileSize``) takes
DELETE, UPDATE and APPEND with ``merge_schema``, and its rows after each
equal delta-rs's on a twin copy that made the same change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark.cli_support import delta_rs_rows, run_cli

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

TABLE = Path(__file__).parents[1] / "delta-rs" / "table_with_column_mapping"
COLUMNS = ["Company Very Short", "Super Name"]


@pytest.fixture
def copies(tmp_path):
    """Ours and the twin delta-rs changes: two copies of the table."""
    ours, twin = str(tmp_path / "ours"), str(tmp_path / "twin")
    shutil.copytree(TABLE, ours)
    shutil.copytree(TABLE, twin)
    return ours, twin


def test_the_table_has_what_the_repro_needs():
    from airflow_delta_provider.delta.table import DeltaTable

    snap = DeltaTable(str(TABLE)).snapshot()
    conf = snap.metadata.configuration
    assert conf["delta.columnMapping.mode"] == "name"
    assert conf["delta.autoOptimize.optimizeWrite"] == "true"
    assert "delta.targetFileSize" in conf
    assert list(snap.partition_columns) == ["Company Very Short"]


def test_delete_rewriting_part_of_a_file(spark, copies):
    from deltalake import DeltaTable

    ours, twin = copies
    result = run_cli(spark, "delete", ours, "--condition", "`Super Name` = 'Anthony Johnson'")
    assert result["metrics"]["numDeletedRows"] == 1
    DeltaTable(twin).delete("\"Super Name\" = 'Anthony Johnson'")
    assert delta_rs_rows(ours, COLUMNS) == delta_rs_rows(twin, COLUMNS)
    assert len(delta_rs_rows(ours, COLUMNS)) == 4


def test_update(spark, copies):
    from deltalake import DeltaTable

    ours, twin = copies
    result = run_cli(
        spark,
        "update",
        ours,
        "--condition",
        "`Super Name` LIKE 'S%' OR `Company Very Short` = 'BME'",
        "--set",
        "`Super Name`=upper(`Super Name`)",
    )
    assert result["metrics"]["numUpdatedRows"] == 2
    DeltaTable(twin).update(
        updates={'"Super Name"': 'upper("Super Name")'},
        predicate="\"Super Name\" LIKE 'S%' OR \"Company Very Short\" = 'BME'",
    )
    assert delta_rs_rows(ours, COLUMNS) == delta_rs_rows(twin, COLUMNS)


def test_append_with_merge_schema(spark, copies, tmp_path):
    """With a new column (whose name a table without mapping would refuse):
    delta-rs cannot evolve a mapped table's schema, so the twin appends the
    rows without it, and the new column is null in every row but the appended ones."""
    from deltalake import write_deltalake

    ours, twin = copies
    source = pa.table(
        {
            "Company Very Short": ["BMS", "NEW"],
            "Super Name": ["Zed A", "Zed B"],
            "Extra Col-x": pa.array([1, 2], pa.int64()),
        }
    )
    src = str(tmp_path / "source.parquet")
    pq.write_table(source, src)
    run_cli(spark, "append", ours, "--source", src, "--format", "parquet", "--merge-schema")
    write_deltalake(twin, source.drop_columns(["Extra Col-x"]), mode="append")
    extra = {(r["Company Very Short"], r["Super Name"]): r["Extra Col-x"] for r in source.to_pylist()}
    expected = sorted(((c, n, extra.get((c, n))) for c, n in delta_rs_rows(twin, COLUMNS)), key=repr)
    assert delta_rs_rows(ours, [*COLUMNS, "Extra Col-x"]) == expected


def test_append_with_merge_schema_and_the_same_columns(spark, copies, tmp_path):
    from deltalake import write_deltalake

    ours, twin = copies
    source = pa.table({"Company Very Short": ["BME", "X Y"], "Super Name": ["Ann", "Bob"]})
    src = str(tmp_path / "source.parquet")
    pq.write_table(source, src)
    run_cli(spark, "append", ours, "--source", src, "--format", "parquet", "--merge-schema")
    write_deltalake(twin, source, mode="append")
    assert delta_rs_rows(ours, COLUMNS) == delta_rs_rows(twin, COLUMNS)


def test_the_cli_runs_the_repro(copies):
    """The command of the issue, as a new user runs it: exit code 0."""
    import subprocess
    import sys

    ours, _ = copies
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_delta_provider.spark",
            "delete",
            ours,
            "--condition",
            "`Super Name` = 'Anthony Johnson'",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"operation":"DELETE"' in done.stdout.splitlines()[-1]
