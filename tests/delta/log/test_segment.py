"""Unit tests for ``delta/log_segment.py``: which files make up a version.

Pure tests build listings of :class:`LogFile` by hand; the ``_last_checkpoint``
tests use a real log folder and, where it helps, golden tables.
"""

from __future__ import annotations

import os
import shutil

import pytest

from airflow_delta_provider.delta.errors import (
    CorruptLogError,
    TableNotFoundError,
    VersionNotFoundError,
)
from airflow_delta_provider.delta.log.segment import build_segment, complete_checkpoints, list_for_version
from airflow_delta_provider.delta.log.store import LogFile, LogStore, resolve_table
from airflow_delta_provider.delta.table import DeltaTable


def commit(v: int) -> LogFile:
    return LogFile(f"{v:020d}.json", v, "commit", 10, 1000 + v)


def cp(v: int, part: int | None = None, parts: int | None = None) -> LogFile:
    if part is None:
        return LogFile(f"{v:020d}.checkpoint.parquet", v, "checkpoint", 10, 1000 + v)
    return LogFile(f"{v:020d}.checkpoint.{part:010d}.{parts:010d}.parquet", v, "checkpoint", 10, 1000 + v, part, parts)


def versions(seg) -> list[int]:
    return [f.version for f in seg.commits]


# --- build_segment ------------------------------------------------------------


def test_latest_without_checkpoint_is_every_commit():
    seg = build_segment([commit(v) for v in range(4)], None)
    assert seg.version == 3
    assert seg.checkpoint_version is None and seg.checkpoint_files == ()
    assert versions(seg) == [0, 1, 2, 3]
    assert seg.last_commit == commit(3)


def test_latest_uses_the_newest_checkpoint_and_the_commits_after_it():
    files = [commit(v) for v in range(13)] + [cp(5), cp(10)]
    seg = build_segment(files, None)
    assert (seg.version, seg.checkpoint_version) == (12, 10)
    assert seg.checkpoint_files == (cp(10),)
    assert versions(seg) == [11, 12]


@pytest.mark.parametrize(("target", "checkpoint", "commits"), [(4, None, [0, 1, 2, 3, 4]), (5, 5, []), (9, 5, [6, 7, 8, 9]), (10, 10, [])])
def test_by_version_uses_the_newest_checkpoint_at_or_below_it(target, checkpoint, commits):
    files = [commit(v) for v in range(13)] + [cp(5), cp(10)]
    seg = build_segment(files, target)
    assert (seg.version, seg.checkpoint_version, versions(seg)) == (target, checkpoint, commits)


def test_checkpoint_only_table_needs_no_commits_before_it():
    seg = build_segment([cp(2), commit(3)], None)
    assert (seg.version, seg.checkpoint_version, versions(seg)) == (3, 2, [3])
    seg = build_segment([cp(2)], None)
    assert (seg.version, versions(seg), seg.last_commit) == (2, [], None)


def test_gap_in_versions_is_a_corrupt_log_naming_the_missing_ones():
    files = [commit(0), commit(1), commit(4), commit(5), commit(7)]
    with pytest.raises(CorruptLogError, match=r"missing commit\(s\) 2-3, 6"):
        build_segment(files, None)
    # A version below the gap is still fine.
    assert versions(build_segment(files, 1)) == [0, 1]


def test_gap_after_a_checkpoint_is_corrupt_but_a_gap_before_it_is_not():
    assert versions(build_segment([commit(0), commit(2), cp(3), commit(3), commit(4)], None)) == [4]
    with pytest.raises(CorruptLogError):
        build_segment([cp(3), commit(3), commit(5)], None)


def test_version_after_latest_is_not_found():
    with pytest.raises(VersionNotFoundError, match="latest version is 2"):
        build_segment([commit(0), commit(1), commit(2)], 3)


def test_negative_version_is_not_found():
    with pytest.raises(VersionNotFoundError):
        build_segment([commit(0)], -1)


def test_cleaned_up_log_without_checkpoint_below_target_is_not_found():
    files = [commit(v) for v in range(5, 12)] + [cp(10)]
    with pytest.raises(VersionNotFoundError, match="cleaned up"):
        build_segment(files, 7)
    assert build_segment(files, 11).checkpoint_version == 10


def test_empty_listing_is_not_a_table():
    with pytest.raises(TableNotFoundError, match="not a Delta table"):
        build_segment([], None)


def v2(v: int, unique: str, ext: str = "json") -> LogFile:
    return LogFile(f"{v:020d}.checkpoint.{unique}.{ext}", v, "v2checkpoint", 10, 1000 + v)


def test_a_log_of_only_a_v2_checkpoint_is_read_from_it():
    seg = build_segment([v2(2, "abc")], None)
    assert (seg.version, seg.checkpoint_files, seg.commits) == (2, (v2(2, "abc"),), ())


def test_one_checkpoint_of_several_at_a_version_is_picked_as_delta_spark_does():
    """UUID-named over multi-part over classic; among UUID-named files the
    greatest name, whatever order the listing gave."""
    base = [commit(0), commit(1), cp(1), cp(1, 1, 2), cp(1, 2, 2)]
    assert complete_checkpoints(base)[1] == (cp(1, 1, 2), cp(1, 2, 2))
    assert complete_checkpoints([cp(1), *base[3:]])[1] == (cp(1, 1, 2), cp(1, 2, 2))
    uuids = [v2(1, "1f", "parquet"), v2(1, "ab"), v2(1, "0c")]
    for listing in (base + uuids, uuids[::-1] + base):
        assert build_segment(listing, None).checkpoint_files == (v2(1, "ab"),)
    # A torn one is passed over for the next in that order, then older ones.
    assert complete_checkpoints(base + uuids, frozenset({v2(1, "ab").name}))[1] == (v2(1, "1f", "parquet"),)
    names = frozenset(f.name for f in uuids) | {cp(1, 1, 2).name}
    assert complete_checkpoints(base + uuids, names)[1] == (cp(1),)


def test_multi_part_checkpoint_is_used_with_every_part_in_order():
    files = [commit(0), commit(1), commit(2), cp(1, 2, 2), cp(1, 1, 2)]
    seg = build_segment(files, None)
    assert seg.checkpoint_version == 1
    assert seg.checkpoint_files == (cp(1, 1, 2), cp(1, 2, 2))
    assert versions(seg) == [2]


def test_multi_part_checkpoint_with_a_missing_part_is_ignored():
    files = [commit(0), commit(1), commit(2), cp(1, 1, 3), cp(1, 3, 3)]
    assert complete_checkpoints(files) == {}
    seg = build_segment(files, None)
    assert seg.checkpoint_version is None and versions(seg) == [0, 1, 2]


def test_an_incomplete_multi_part_set_does_not_hide_a_complete_one():
    files = [commit(0), commit(1), cp(1, 1, 2), cp(1, 2, 2), cp(1, 1, 3)]
    assert complete_checkpoints(files) == {1: (cp(1, 1, 2), cp(1, 2, 2))}


def test_skipped_checkpoints_fall_back_to_an_older_one_or_to_commits():
    files = [commit(v) for v in range(12)] + [cp(5), cp(10)]
    assert build_segment(files, None, skip_checkpoints=frozenset({10})).checkpoint_version == 5
    seg = build_segment(files, None, skip_checkpoints=frozenset({5, 10}))
    assert seg.checkpoint_version is None and versions(seg) == list(range(12))


# --- list_for_version and _last_checkpoint ------------------------------------


@pytest.fixture
def store(tmp_path) -> LogStore:
    s = LogStore(resolve_table(str(tmp_path)))
    os.makedirs(tmp_path / "_delta_log")
    for v in range(12):
        open(tmp_path / "_delta_log" / f"{v:020d}.json", "w").close()
    for v in (5, 10):
        open(tmp_path / "_delta_log" / f"{v:020d}.checkpoint.parquet", "w").close()
    return s


def listed_from(files: list[LogFile]) -> int:
    return min(f.version for f in files)


def test_hint_is_where_listing_starts(store):
    store.write_last_checkpoint({"version": 10, "size": 3})
    files = list_for_version(store, None)
    assert listed_from(files) == 10
    assert build_segment(files, None).checkpoint_version == 10


def test_missing_hint_lists_from_zero(store):
    assert listed_from(list_for_version(store, None)) == 0


def test_corrupt_hint_lists_from_zero(store):
    with open(os.path.join(store.table_root, "_delta_log", "_last_checkpoint"), "w") as f:
        f.write('{"version": 10, "si')
    files = list_for_version(store, None)
    assert listed_from(files) == 0
    assert build_segment(files, None).checkpoint_version == 10


def test_stale_hint_still_finds_newer_checkpoints_and_commits(store):
    store.write_last_checkpoint({"version": 5, "size": 3})
    seg = build_segment(list_for_version(store, None), None)
    assert (seg.version, seg.checkpoint_version) == (11, 10)


def test_hint_above_the_wanted_version_is_not_used(store):
    store.write_last_checkpoint({"version": 10, "size": 3})
    files = list_for_version(store, 7)
    assert listed_from(files) == 0
    assert build_segment(files, 7).checkpoint_version == 5


def test_hint_to_a_missing_checkpoint_lists_from_zero(store):
    store.write_last_checkpoint({"version": 8, "size": 3})
    files = list_for_version(store, None)
    assert listed_from(files) == 0
    seg = build_segment(files, None)
    assert (seg.version, seg.checkpoint_version) == (11, 10)


def test_hint_to_a_version_beyond_the_log_lists_from_zero(store):
    store.write_last_checkpoint({"version": 40, "size": 3})
    assert build_segment(list_for_version(store, None), None).version == 11


def test_golden_multi_part_checkpoint_is_replayed(golden_dir):
    snap = DeltaTable(golden_dir / "multi-part-checkpoint").snapshot()
    assert (snap.version, snap.segment.checkpoint_version, len(snap.segment.checkpoint_files)) == (1, 1, 2)
    assert snap.num_files == 10


def test_golden_multi_part_checkpoint_missing_a_part_without_hint(golden_dir, tmp_path):
    table = tmp_path / "t"
    shutil.copytree(golden_dir / "multi-part-checkpoint", table)
    log = table / "_delta_log"
    (log / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    (log / "_last_checkpoint").unlink()
    snap = DeltaTable(table).snapshot()
    assert (snap.version, snap.segment.checkpoint_version) == (1, None)
    assert snap.num_files == 10


def test_golden_multi_part_checkpoint_missing_a_part_with_hint(golden_dir, tmp_path):
    table = tmp_path / "t"
    shutil.copytree(golden_dir / "multi-part-checkpoint", table)
    (table / "_delta_log" / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    snap = DeltaTable(table).snapshot()
    assert (snap.version, snap.segment.checkpoint_version) == (1, None)
    assert snap.num_files == 10


def test_golden_versions_not_contiguous_is_corrupt(golden_dir):
    with pytest.raises(CorruptLogError, match="missing commit"):
        DeltaTable(golden_dir / "versions-not-contiguous").snapshot()
