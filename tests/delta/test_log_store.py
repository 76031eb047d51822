"""Unit tests for ``delta/log_store.py``: listing, put-if-absent, ``_last_checkpoint``."""

from __future__ import annotations

import os
import threading

import pyarrow.fs as pafs
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log_store import LogFile, LogStore, checkpoint_name, commit_name, resolve_table


@pytest.fixture
def store(tmp_path) -> LogStore:
    fs, root = resolve_table(str(tmp_path / "t"))
    return LogStore(fs, root)


def log_names(store: LogStore) -> list[str]:
    return sorted(os.listdir(store.log_dir))


def test_names_are_zero_padded_to_20_digits():
    assert commit_name(7) == "00000000000000000007.json"
    assert checkpoint_name(10) == "00000000000000000010.checkpoint.parquet"


def test_put_if_absent_creates_the_commit(store):
    assert store.put_if_absent(0, b'{"a":1}\n') is True
    assert store.read_commit(0) == b'{"a":1}\n'
    assert store.exists(commit_name(0))
    assert log_names(store) == [commit_name(0)]


def test_put_if_absent_never_overwrites(store):
    assert store.put_if_absent(0, b"first\n")
    before = os.stat(store.path(commit_name(0)))
    assert store.put_if_absent(0, b"second\n") is False
    assert store.read_commit(0) == b"first\n"
    assert os.stat(store.path(commit_name(0))).st_ino == before.st_ino
    # The losing attempt leaves no temporary file behind.
    assert log_names(store) == [commit_name(0)]


def test_put_if_absent_under_a_race_has_exactly_one_winner(store):
    results: list[tuple[int, bool]] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        results.append((i, store.put_if_absent(3, f"writer {i}\n".encode())))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, ok in results if ok]
    assert len(winners) == 1
    assert store.read_commit(3) == f"writer {winners[0]}\n".encode()
    assert log_names(store) == [commit_name(3)]


def test_commit_file_is_complete_when_visible(store):
    payload = b"x" * 1_000_000
    assert store.put_if_absent(1, payload)
    assert os.path.getsize(store.path(commit_name(1))) == len(payload)


def test_list_from_filters_sorts_and_classifies(store):
    os.makedirs(store.log_dir)
    names = [
        "00000000000000000000.json",
        "00000000000000000001.json",
        "00000000000000000002.json",
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000003.checkpoint.0000000002.0000000002.parquet",
        "00000000000000000003.json",
        "00000000000000000004.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        "00000000000000000001.00000000000000000003.compacted.json",
        "00000000000000000003.crc",
        ".00000000000000000003.json.crc",
        "_last_checkpoint",
        "00000000000000000005.json.tmp",
        "not-a-log-file.txt",
    ]
    for n in names:
        with open(store.path(n), "wb") as f:
            f.write(b"{}")
    os.makedirs(store.path("_commits"))
    files = store.list_from(2)
    assert [f.version for f in files] == sorted(f.version for f in files)
    got = {(f.name, f.kind, f.part, f.num_parts) for f in files}
    assert got == {
        ("00000000000000000002.checkpoint.parquet", "checkpoint", None, None),
        ("00000000000000000002.json", "commit", None, None),
        ("00000000000000000003.checkpoint.0000000001.0000000002.parquet", "checkpoint", 1, 2),
        ("00000000000000000003.checkpoint.0000000002.0000000002.parquet", "checkpoint", 2, 2),
        ("00000000000000000003.crc", "crc", None, None),
        ("00000000000000000003.json", "commit", None, None),
        ("00000000000000000004.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", "v2checkpoint", None, None),
    }
    assert [f.version for f in store.list_from(0) if f.kind == "compaction"] == [1]
    assert all(f.size == 2 for f in files)


def test_list_from_reports_mtime_in_ms(store):
    store.put_if_absent(0, b"{}\n")
    os.utime(store.path(commit_name(0)), ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    (f,) = store.list_from(0)
    assert f.mtime_ms == 1_600_000_000_123
    assert store.mtime_ms(commit_name(0)) == 1_600_000_000_123


def test_list_of_missing_log_is_empty(store):
    assert store.list_from(0) == []


def test_logfile_parse_ignores_other_names():
    assert LogFile.parse("00000000000000000001.json.crc", 1, 1) is None
    assert LogFile.parse("1.json", 1, 1) is None
    assert LogFile.parse("00000000000000000001.checkpoint.parquet.tmp", 1, 1) is None


def test_read_missing_file_raises_file_not_found(store):
    with pytest.raises(FileNotFoundError):
        store.read_commit(0)


def test_file_uri_and_plain_path_resolve_to_the_same_root(tmp_path):
    plain = str(tmp_path / "my table")
    uri = "file://" + str(tmp_path / "my%20table")
    fs1, root1 = resolve_table(plain)
    fs2, root2 = resolve_table(uri)
    fs3, root3 = resolve_table(plain + "/")
    assert isinstance(fs1, pafs.LocalFileSystem) and isinstance(fs2, pafs.LocalFileSystem)
    assert root1 == root2 == root3 == plain
    # A commit written through one is read through the other.
    assert LogStore(fs1, root1).put_if_absent(0, b"v0\n")
    assert LogStore(fs2, root2).read_commit(0) == b"v0\n"
    assert os.path.exists(os.path.join(plain, "_delta_log", commit_name(0)))


def test_relative_paths_and_absolute_file_uris_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, root = resolve_table("rel/t")
    assert root == str(tmp_path / "rel" / "t")
    _, root = resolve_table(f"file://{tmp_path}/x")
    assert root == str(tmp_path / "x")


def test_empty_table_path_is_invalid_input():
    with pytest.raises(InvalidInputError):
        resolve_table("")


def test_last_checkpoint_round_trip_and_overwrite(store):
    assert store.read_last_checkpoint() is None
    store.write_last_checkpoint({"version": 10, "size": 13})
    assert store.read_last_checkpoint() == {"version": 10, "size": 13}
    store.write_last_checkpoint({"version": 20, "size": 5, "sizeInBytes": 100, "numOfAddFiles": 2})
    assert store.read_last_checkpoint()["version"] == 20
    assert [n for n in log_names(store) if n.endswith(".tmp")] == []


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b'{"version":10,"si', b"[1,2]", b'{"size": 3}', b'{"version": "10"}', b"\xff\xfe"],
)
def test_corrupt_last_checkpoint_reads_as_none(store, content):
    os.makedirs(store.log_dir)
    with open(store.path("_last_checkpoint"), "wb") as f:
        f.write(content)
    assert store.read_last_checkpoint() is None


def test_write_atomic_replaces_whole_and_delete_is_idempotent(store):
    store.write_atomic("x", b"one")
    store.write_atomic("x", b"two")
    assert store.read("x") == b"two"
    assert log_names(store) == ["x"]
    store.delete("x")
    store.delete("x")
    assert not store.exists("x")


def test_non_local_store_refuses_commits_rather_than_risk_overwrite(tmp_path):
    from airflow_delta_provider.delta.errors import CommitFailedError

    local = pafs.LocalFileSystem()
    sub = pafs.SubTreeFileSystem(str(tmp_path), local)
    store = LogStore(sub, "t")
    with pytest.raises(CommitFailedError, match="put-if-absent"):
        store.put_if_absent(0, b"{}\n")
    # Reading and listing still work through pyarrow.fs.
    os.makedirs(tmp_path / "t" / "_delta_log")
    (tmp_path / "t" / "_delta_log" / commit_name(0)).write_bytes(b"{}\n")
    assert [f.name for f in store.list_from(0)] == [commit_name(0)]
    assert store.read_commit(0) == b"{}\n"
