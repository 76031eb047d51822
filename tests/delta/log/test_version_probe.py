"""VersionProbe: version questions answered without listing the log."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.log.version_probe import VersionProbe
from tests.delta_logs import BASE_TS, delete_commits, write_last_checkpoint, write_log


@pytest.mark.parametrize("versions", [1, 2, 3, 9, 10, 11, 17, 64, 65, 130])
@pytest.mark.parametrize("interval", [None, 10])
def test_probe_finds_the_latest_version(tmp_path, versions, interval):
    root = write_log(tmp_path / "t", versions, checkpoint_interval=interval)
    probe = VersionProbe(str(root))
    assert probe.latest() == versions - 1
    for after in range(-1, versions):
        assert probe.newer_than(after) == (versions - 1 if after < versions - 1 else None)


def test_probe_on_a_cleaned_log(tmp_path):
    root = write_log(tmp_path / "t", 35)  # _last_checkpoint -> 30
    delete_commits(root, 20)
    probe = VersionProbe(str(root))
    assert probe.latest() == 34
    assert probe.first_present(3, 30) == 20
    assert probe.table_exists(5)


def test_probe_without_hint_or_version_zero_lists_once(tmp_path, log_calls):
    root = write_log(tmp_path / "t", 8, checkpoint_interval=None)
    delete_commits(root, 3)
    assert VersionProbe(str(root)).latest() == 7
    assert log_calls.listings == 1


def test_probe_ignores_a_stale_hint(tmp_path):
    root = write_log(tmp_path / "t", 5, checkpoint_interval=None)
    write_last_checkpoint(root, 40)  # left over from an earlier table at this path
    probe = VersionProbe(str(root))
    assert probe.latest() == 4
    assert probe.newer_than(2) == 4


def test_probe_of_a_missing_table(tmp_path):
    probe = VersionProbe(str(tmp_path / "nothing"))
    assert probe.latest() is None
    assert probe.newer_than(-1) is None
    assert not probe.table_exists()


def test_probe_info_reads_commit_info(tmp_path):
    root = write_log(tmp_path / "t", 3)
    info = VersionProbe(str(root)).info(2)
    assert (info.version, info.timestamp, info.operation) == (2, BASE_TS + 2000, "WRITE")


def test_probe_cost_does_not_grow_with_the_log(big_log, tmp_path, log_calls):
    # Same tail since the last checkpoint (9 commits after it), very different lengths.
    small = write_log(tmp_path / "small", 20)
    assert VersionProbe(str(small)).latest() == 19
    small_calls = dict(log_calls)
    log_calls.clear()
    assert VersionProbe(str(big_log)).latest() == 9999
    assert dict(log_calls) == small_calls
    # The hint, then one listing from it: never a listing of the whole log.
    assert log_calls.total <= 3 and log_calls.listings == 1


