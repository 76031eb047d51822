"""CommitWatch: new commits judged once each, on a history delta-rs wrote."""

from __future__ import annotations

import asyncio

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.watch.commit_filter import CommitFilter
from airflow_delta_provider.delta.watch.commit_watch import CommitWatch
from tests.delta_logs import write_commit, write_log
from tests.delta_rs_history import DAY_2, EXPECTED, append, write_mixed_history

pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    return write_mixed_history(tmp_path_factory.mktemp("mixed") / "t")


@pytest.mark.parametrize(("filters", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
def test_each_filter_passes_exactly_the_expected_versions(history, filters, expected):
    for every_commit in (True, False):
        watch = CommitWatch(VersionProbe(history), -1, CommitFilter.build(**filters), every_commit=every_commit)
        fired = watch.poll()
        assert (fired.versions if fired else []) == expected
        assert watch.cursor == 7
        if fired:
            assert list(fired.skipped) == [v for v in range(8) if v not in expected]


@pytest.mark.parametrize(("filters", "expected"), EXPECTED.values(), ids=EXPECTED.keys())
def test_async_polls_agree(history, filters, expected):
    watch = CommitWatch(VersionProbe(history), -1, CommitFilter.build(**filters), every_commit=True)
    fired = asyncio.run(watch.poll_async())
    assert (fired.versions if fired else []) == expected


def test_polls_from_a_baseline_read_each_new_commit_once(history, log_calls):
    # From baseline 1 in steps: the partition filter reads the table's partitioning once, first.
    watch = CommitWatch(VersionProbe(history), 1, CommitFilter.build(partition={"ds": DAY_2}))
    watch.load_partitioning()
    log_calls.clear()
    fired = watch.poll()
    assert fired.versions == [4] and list(fired.skipped) == [2, 3, 5, 6, 7]
    # One HEAD, one listing, and one GET per commit 2..7.
    assert (log_calls.get("head", 0) + log_calls.get("exists", 0), log_calls.listings, log_calls["get"]) == (1, 1, 6)
    log_calls.clear()
    assert watch.poll() is None
    assert log_calls.total == 1


def test_every_commit_filter_reads_only_the_latest_commit(tmp_path, log_calls):
    root = write_log(tmp_path / "t", 30)
    watch = CommitWatch(VersionProbe(str(root)), 5, CommitFilter(data_changes_only=False))
    log_calls.clear()
    fired = watch.poll()
    assert fired.versions == list(range(6, 30)) and fired.last.operation == "WRITE"
    assert log_calls["get"] == 1


def test_skipped_versions_accumulate_until_a_commit_passes(tmp_path):
    root = write_log(tmp_path / "t", 2)
    watch = CommitWatch(VersionProbe(str(root)), 1, CommitFilter.build(operations=["MERGE"]))
    write_commit(root, 2)
    assert watch.poll() is None and watch.skipped == [2] and watch.cursor == 2
    write_commit(root, 3)
    write_commit(root, 4, operation="MERGE")
    write_commit(root, 5)
    fired = watch.poll()
    assert (fired.versions, list(fired.skipped), watch.cursor) == ([4], [2, 3, 5], 5)


def test_a_partition_filter_follows_a_new_partitioning(tmp_path):
    """An overwrite that repartitions the table changes what the filter reads."""
    from deltalake import write_deltalake

    from tests.delta_rs_history import rows

    uri = str(tmp_path / "t")
    write_deltalake(uri, rows(DAY_2, 2), partition_by=["ds"])
    watch = CommitWatch(VersionProbe(uri), 0, CommitFilter.build(partition={"ds": DAY_2}))
    watch.load_partitioning()
    write_deltalake(uri, rows(DAY_2, 2), mode="overwrite", schema_mode="overwrite", partition_by=["id"])
    with pytest.raises(
        InvalidInputError, match=r"reads ds, which is not a partition column of .* \(partitioned by id\)"
    ):
        watch.poll()


def test_a_bad_partition_column_fails_at_the_first_poll(history):
    watch = CommitWatch(VersionProbe(history), 7, CommitFilter.build(partition={"day": DAY_2}))
    with pytest.raises(InvalidInputError, match="reads day, which is not a partition column"):
        watch.poll()


def test_new_commits_after_the_history(tmp_path):
    uri = write_mixed_history(tmp_path / "t")
    watch = CommitWatch(VersionProbe(uri), 7, CommitFilter.build(partition={"ds": DAY_2}))
    append(uri, "2024-01-05", 1)
    assert watch.poll() is None and watch.skipped == [8]
    append(uri, DAY_2, 1)
    assert watch.poll().versions == [9]
