"""Reading table changes: the changes of a version range as one DataFrame
(:func:`~airflow_delta_provider.spark.read.table_changes.read_changes`),
refused by name where the log does not record them. Which files hold a
range's changes is the core's (``tests/delta/test_table_changes.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_delta_provider.delta.errors import ChangeDataUnavailableError, InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.read.table_changes import read_changes
from tests.operations.runs import run_alter, run_append, run_delete, run_update
from tests.spark.change_data_feed_support import CDF, cdf_table, ours, source, theirs


def test_a_range_that_is_not_recorded_is_refused_by_name(spark, tmp_path):
    path = str(tmp_path / "t")
    run_append(spark, path, source(tmp_path, "seed", [(1, "a", 1)]), format="parquet")
    run_alter(spark, path, {"set_properties": CDF})  # version 1
    run_update(spark, path, None, {"amount": "2"})  # version 2
    with pytest.raises(ChangeDataUnavailableError, match="not recorded for version 0"):
        read_changes(spark, path, 0)
    assert ours(spark, path, 1) == [(1, "a", 1, "update_preimage", 2), (1, "a", 2, "update_postimage", 2)]
    with pytest.raises(ChangeDataUnavailableError, match="after the latest version 2"):
        read_changes(spark, path, 3)
    with pytest.raises(ChangeDataUnavailableError, match="end version 9 is after"):
        read_changes(spark, path, 1, 9)
    with pytest.raises(InvalidInputError, match="before the start version"):
        read_changes(spark, path, 2, 1)
    (Path(path) / "_delta_log" / f"{0:020d}.json").unlink()  # log cleanup took version 0
    (Path(path) / "_delta_log" / f"{1:020d}.json").rename(Path(path) / "_delta_log" / "keep")
    with pytest.raises(ChangeDataUnavailableError, match=r"version 1 .* no longer in the log"):
        read_changes(spark, path, 1)


def test_commit_timestamps_are_the_in_commit_timestamps(spark, tmp_path):
    path = cdf_table(spark, tmp_path, {"delta.enableInCommitTimestamps": "true"})
    version = run_delete(spark, path, "id = 4").version
    (row,) = read_changes(spark, path, version).frame.collect()
    ict = DeltaTable(path).history(limit=1)[0]["inCommitTimestamp"]
    assert int(row["_commit_timestamp"].timestamp() * 1000) == ict


def test_a_range_of_no_data_change_is_empty_with_the_feed_columns(spark, tmp_path):
    path = cdf_table(spark, tmp_path)
    version = run_alter(spark, path, {"set_properties": {"delta.appendOnly": "false"}}).version
    frame = read_changes(spark, path, version).frame
    assert frame.count() == 0
    assert frame.columns == ["id", "part", "amount", "_change_type", "_commit_version", "_commit_timestamp"]
    assert ours(spark, path, version) == theirs(path, version) == []
