"""PartitionWatch: a partition's live files and rows, kept from the log alone."""

from __future__ import annotations

import asyncio

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.watch.partition_watch import PartitionWatch
from tests.delta_rs_history import DAY_1, DAY_2, DAY_3, append, write_mixed_history

deltalake = pytest.importorskip("deltalake")


def _rows_in(uri: str, ds: str) -> int:
    return deltalake.DeltaTable(uri).to_pyarrow_table(filters=[("ds", "=", ds)]).num_rows


def test_an_existing_partition_is_ready_at_the_first_poll(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    state = PartitionWatch(VersionProbe(uri), {"ds": DAY_1}).poll()
    # After OPTIMIZE and a copy-on-write DELETE: one file, 4 live rows, as delta-rs reads it.
    assert state.to_dict() == {"version": 7, "num_files": 1, "num_records": _rows_in(uri, DAY_1)}
    assert state.num_records == 4


def test_a_missing_partition_becomes_ready_at_the_commit_that_fills_it(tmp_path, log_calls):
    uri = write_mixed_history(tmp_path / "t")
    watch = PartitionWatch(VersionProbe(uri), f"ds = '{DAY_3}'", min_records=3)
    assert watch.poll() is None and watch.version == 7
    log_calls.clear()
    assert watch.poll() is None
    assert log_calls.total == 1  # one existence check: nothing is new
    append(uri, DAY_2, 5)  # another partition
    append(uri, DAY_3, 2)  # too few rows
    assert watch.poll() is None and watch.state.to_dict() == {"version": 9, "num_files": 1, "num_records": 2}
    append(uri, DAY_3, 1, start=100)  # now 3 rows: ready at version 10
    append(uri, DAY_3, 1, start=200)
    log_calls.clear()
    state = watch.poll()
    assert state.to_dict() == {"version": 10, "num_files": 2, "num_records": 3}
    assert log_calls["get"] == 2  # versions 10 and 11, each read once


def test_deleted_rows_count_against_the_partition(tmp_path):
    uri = str(tmp_path / "t")
    append(uri, DAY_1, 3)
    watch = PartitionWatch(VersionProbe(uri), {"ds": DAY_1}, min_records=3)
    assert watch.poll().num_records == 3
    deltalake.DeltaTable(uri).delete("id = 0")
    again = PartitionWatch(VersionProbe(uri), {"ds": DAY_1}, min_records=3)
    assert again.poll() is None and again.state.num_records == 2
    deltalake.DeltaTable(uri).delete(f"ds = '{DAY_1}'")
    emptied = PartitionWatch(VersionProbe(uri), {"ds": DAY_1})
    assert emptied.poll() is None and emptied.state.num_files == 0


def test_async_poll_agrees(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    watch = PartitionWatch(VersionProbe(uri), {"ds": DAY_3})
    assert asyncio.run(watch.poll_async()) is None
    append(uri, DAY_3, 2)
    assert asyncio.run(watch.poll_async()).to_dict() == {"version": 8, "num_files": 1, "num_records": 2}


def test_a_missing_table_is_not_ready(tmp_path):
    watch = PartitionWatch(VersionProbe(str(tmp_path / "none")), {"ds": DAY_1})
    assert watch.poll() is None and watch.version is None


def test_bad_arguments_are_refused(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    with pytest.raises(InvalidInputError, match="min_records must be a positive integer"):
        PartitionWatch(VersionProbe(uri), {"ds": DAY_1}, min_records=0)
    with pytest.raises(InvalidInputError, match="reads id, which is not a partition column"):
        PartitionWatch(VersionProbe(uri), {"id": 1}).poll()
