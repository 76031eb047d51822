"""Our bugs are ours (issue 44, item 4): a Spark analysis error on SQL the
provider built is an InternalError that says so, asks for a report and names
the logical column of any physical one; an analysis error of the user's own
SQL stays InvalidInputError."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from airflow_delta_provider.delta.errors import InternalError, InvalidInputError
from airflow_delta_provider.delta.table_features.column_mapping import logical_names, with_logical_names

TABLE = Path(__file__).parents[1] / "delta-rs" / "table_with_column_mapping"
PARTITION_PHYSICAL = "col-173b4db9-b5ad-427f-9e75-516aae37fbbb"


def bare_physical_names(message: str) -> list[str]:
    """The physical names in ``message`` that no logical name follows."""
    return [m.group(0) for m in re.finditer(r"col-[0-9a-f-]+", message) if not message[m.end() :].startswith(" (")]


def _names() -> dict[str, str]:
    from airflow_delta_provider.delta.table import DeltaTable

    return logical_names(DeltaTable(str(TABLE)).snapshot().schema)


def test_physical_names_are_followed_by_their_logical_ones():
    names = _names()
    assert names[PARTITION_PHYSICAL] == "Company Very Short"
    text = "The unquoted identifier col-173b4db9-b5ad is invalid; col-3877fd94-0973-4941-ac6b-646849a1ff65 too"
    shown = with_logical_names(text, names)
    assert "col-173b4db9-b5ad (column 'Company Very Short')" in shown
    assert "col-3877fd94-0973-4941-ac6b-646849a1ff65 (column 'Super Name')" in shown
    unknown = with_logical_names("col-deadbeef-0000 broke", names)
    assert unknown == "col-deadbeef-0000 (a physical column name of column mapping) broke"
    assert with_logical_names("no names here", {}) == "no names here"


def _analysis_error(spark):
    """A real Spark analysis error on SQL "we" built: a hint naming a physical name unquoted."""
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as caught:
        _ = spark.range(1).hint("rebalance", PARTITION_PHYSICAL).schema
    return caught.value


def test_an_analysis_error_of_sql_we_built_is_internal(spark):
    from airflow_delta_provider.spark.cli import spark_input_error, translate_spark_error

    error = _analysis_error(spark)
    translated = translate_spark_error(error, _names)
    assert isinstance(translated, InternalError) and not isinstance(translated, InvalidInputError)
    message = str(translated)
    assert "bug of airflow-delta-provider" in message and "please report it" in message
    assert "(column 'Company Very Short')" in message
    assert bare_physical_names(message) == [], message
    assert spark_input_error(error) is None  # not the input's fault


def test_an_analysis_error_of_the_users_sql_is_bad_input(spark):
    from airflow_delta_provider.spark.cli import translate_spark_error
    from airflow_delta_provider.spark.conditions import user_input

    error = _analysis_error(spark)
    with pytest.raises(Exception) as caught, user_input("replace_where", "x = 1"):
        raise error
    translated = translate_spark_error(caught.value, _names)
    assert isinstance(translated, InvalidInputError)
    assert str(translated).startswith("invalid replace_where 'x = 1': [")


def test_a_data_exception_stays_bad_input(spark):
    from pyspark.errors import PySparkException

    from airflow_delta_provider.spark.cli import translate_spark_error

    with pytest.raises(PySparkException) as caught:
        spark.sql("SELECT CAST('abc' AS INT)").collect()
    assert isinstance(translate_spark_error(caught.value), InvalidInputError)


@pytest.fixture
def table_copy(tmp_path):
    path = str(tmp_path / "table")
    shutil.copytree(TABLE, path)
    return path


def test_a_bug_of_ours_exits_1_as_internal_error_naming_logical_columns(spark, table_copy, capsys, monkeypatch):
    """The optimized write's REBALANCE as it was before issue 44 (physical
    names unquoted): the CLI reports our bug, not the user's input."""
    from airflow_delta_provider.spark import cli
    from airflow_delta_provider.spark.write import optimized_write

    monkeypatch.setattr(optimized_write, "rebalanced", lambda frame, columns: frame.hint("rebalance", *columns))
    before = sorted(p.name for p in Path(table_copy, "_delta_log").iterdir())
    with pytest.raises(SystemExit) as exited:
        cli.main(
            ["delete", table_copy, "--condition", "`Super Name` = 'Anthony Johnson'"],
            session_factory=lambda conf: spark,
        )
    assert exited.value.code == cli.EXIT_INTERNAL
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("InternalError: Spark could not analyse SQL the provider built: [INVALID_IDENTIFIER]")
    assert "(column 'Company Very Short')" in last and "bug of airflow-delta-provider" in last
    assert bare_physical_names(last) == [], last
    assert sorted(p.name for p in Path(table_copy, "_delta_log").iterdir()) == before


def test_a_users_unknown_column_exits_2_as_bad_input(spark, table_copy, capsys):
    from airflow_delta_provider.spark import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["delete", table_copy, "--condition", "`No Such` = 1"], session_factory=lambda conf: spark)
    assert exited.value.code == cli.EXIT_BAD_INPUT
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("UnresolvedColumnError: invalid condition") and "UNRESOLVED_COLUMN" in last


def test_a_users_sql_spark_alone_refuses_exits_2_as_bad_input(spark, table_copy, capsys):
    """A field of a string column: pre-flight only knows the column exists; Spark's analysis refuses it."""
    from airflow_delta_provider.spark import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["delete", table_copy, "--condition", "`Super Name`.nosuch = 1"], session_factory=lambda conf: spark)
    assert exited.value.code == cli.EXIT_BAD_INPUT
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("InvalidInputError: invalid condition '`Super Name`.nosuch = 1': ["), last


def test_a_store_connection_spark_gave_up_on_is_a_retryable_storage_error():
    """In hadoop mode S3A may let a reset escape its retries (the AWS SDK's
    UncheckedIOException, as tests/spark/runtime/test_hadoop_s3a_under_faults.py
    met): a StorageError, which Airflow retries, not a crash."""
    from pyspark.errors.exceptions.connect import UnknownException

    from airflow_delta_provider.delta.errors import StorageError
    from airflow_delta_provider.hooks.delta_operation import is_permanent
    from airflow_delta_provider.spark.cli import translate_spark_error

    reset = UnknownException(message="(java.io.UncheckedIOException) java.net.SocketException: Connection reset")
    translated = translate_spark_error(reset)
    assert isinstance(translated, StorageError) and not is_permanent(type(translated).__name__)
    assert "java.net.SocketException: Connection reset" in str(translated)
    # ABFS under faults (tests/spark/runtime/test_hadoop_abfs_under_faults.py): a task's output rename failed
    rename = UnknownException(
        message="[TASK_WRITE_FAILED] Task failed while writing rows to abfs://c@a.dfs.core.windows.net/t/_delta_staging_1.\n"
        "Caused by: java.io.IOException: Could not rename abfs://c@a.dfs.core.windows.net/t/_delta_staging_1/_temporary/0/"
        "_temporary/attempt_1 to abfs://c@a.dfs.core.windows.net/t/_delta_staging_1/_temporary/0/task_1"
    )
    assert isinstance(translate_spark_error(rename), StorageError)
    merged = UnknownException(
        message="(java.io.IOException) Failed to rename VersionedFileStatus{path=abfs://c@a.dfs.core.windows.net/t/"
        "_delta_staging_1/_temporary/0/task_1/part-0.parquet} to abfs://c@a.dfs.core.windows.net/t/_delta_staging_1"
    )
    assert isinstance(translate_spark_error(merged), StorageError)
    # a rename outside our staging folder is not known to be the store's
    assert translate_spark_error(UnknownException(message="(java.io.IOException) Failed to rename /a to /b")) is None
    assert translate_spark_error(UnknownException(message="(java.lang.IllegalStateException) boom")) is None
    assert translate_spark_error(OSError("java.net.SocketException")) is None  # not Spark's
