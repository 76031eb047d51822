"""CHANGES: the changes of a version range written to a folder of their own,
with the rows per change type in the result."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from tests.operations.runs import run_delete, run_update
from tests.spark.arrow_support import arrow_workers  # noqa: F401 - the fixture
from tests.spark.change_data_feed_support import cdf_table


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_changes_are_written_to_a_folder_with_the_rows_per_change_type(spark, tmp_path, io, request):
    if io == "arrow":
        request.getfixturevalue("arrow_workers")
    from airflow_delta_provider.delta.table_changes import read_summary
    from tests.operations.runs import run_changes

    path = cdf_table(spark, tmp_path, {"delta.enableDeletionVectors": "true"} if io == "arrow" else {})
    run_update(spark, path, "id = 1", {"amount": "0"}, io=io)
    run_delete(spark, path, "id = 2", io=io)
    output = tmp_path / "out"
    run_changes(spark, path, 1, 1, str(output), io=io)  # an earlier try
    (output / "stale.parquet").write_bytes(b"left by a failed try")
    result = run_changes(spark, path, 1, None, str(output), io=io)
    assert (result.operation, result.version) == ("CHANGES", 2)
    assert result.metrics["changes"] == {"insert": 0, "delete": 1, "update_preimage": 1, "update_postimage": 1}
    written = pq.read_table(output)
    assert sorted(written["id"].to_pylist()) == [1, 1, 2] and not (output / "stale.parquet").exists()
    assert written.schema.names == ["id", "part", "amount", "_change_type", "_commit_version", "_commit_timestamp"]
    assert read_summary(str(output))["metrics"]["changes"] == result.metrics["changes"]
    if io == "hadoop":
        run_changes(spark, path, 1, 1, str(tmp_path / "csv"), "csv", io=io)
        assert (tmp_path / "csv").is_dir() and any(p.suffix == ".csv" for p in (tmp_path / "csv").iterdir())
    else:
        with pytest.raises(InvalidInputError, match="arrow I/O, which writes parquet only"):
            run_changes(spark, path, 1, 1, str(tmp_path / "csv"), "csv", io=io)


def test_an_output_folder_inside_the_table_or_of_another_table_is_refused(spark, tmp_path):
    from tests.operations.runs import run_changes

    path = cdf_table(spark, tmp_path)
    before = sorted(p.relative_to(path) for p in Path(path).rglob("*"))
    for output in (path, str(Path(path) / "changes"), str(tmp_path)):  # the table, inside it, holding it
        with pytest.raises(InvalidInputError, match="lies inside or holds the table"):
            run_changes(spark, path, 0, None, output)
    foreign = tmp_path / "reports"
    foreign.mkdir()
    (foreign / "q3.csv").write_text("keep me")
    with pytest.raises(InvalidInputError, match="files an earlier CHANGES run did not write"):
        run_changes(spark, path, 0, None, str(foreign))
    assert (foreign / "q3.csv").read_text() == "keep me"
    (tmp_path / "other").mkdir()
    other = cdf_table(spark, tmp_path / "other")
    with pytest.raises(InvalidInputError, match="holds a Delta table"):
        run_changes(spark, path, 0, None, other)
    assert sorted(p.relative_to(path) for p in Path(path).rglob("*")) == before
