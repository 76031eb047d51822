"""The CONVERT command: the Spark CLI runs it with no Spark session, in a
subprocess, and a second conversion fails with one line naming the error."""

from __future__ import annotations

import subprocess
import sys

from airflow_delta_provider.delta.table import DeltaTable
from tests.operations.runs import run_convert
from tests.parquet_folders import EXPECTED, rows_by_delta_rs, write_folder


def test_run_convert_needs_no_session(tmp_path) -> None:
    write_folder(tmp_path)
    result = run_convert(None, str(tmp_path), "day date, region string", {"delta.appendOnly": "true"}, token="t")
    assert (result.version, result.operation, dict(result.metrics)) == (0, "CONVERT", {"numConvertedFiles": 2})
    assert DeltaTable(tmp_path).find_commit("t") is not None
    assert rows_by_delta_rs(str(tmp_path)) == EXPECTED


def test_the_spark_cli_converts_with_no_spark_session(tmp_path) -> None:
    write_folder(tmp_path)
    argv = [sys.executable, "-m", "airflow_delta_provider.spark", "convert", str(tmp_path),
            "--partition-by", "day date, region string", "--property", "delta.appendOnly=true"]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True, text=True)
    assert rows_by_delta_rs(str(tmp_path)) == EXPECTED
    assert DeltaTable(tmp_path).history()[0]["operation"] == "CONVERT"
    bad = subprocess.run(argv, capture_output=True, text=True)
    assert bad.returncode != 0 and "TableAlreadyExistsError" in bad.stderr
