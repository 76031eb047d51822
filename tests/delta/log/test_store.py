"""Unit tests for ``delta/log_store.py``: listing, put-if-absent, ``_last_checkpoint``."""

from __future__ import annotations

import os
import threading

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.store import LogFile, LogStore, checkpoint_name, commit_name, resolve_table


@pytest.fixture
def store(tmp_path) -> LogStore:
    return LogStore(resolve_table(str(tmp_path / "t")))


def log_dir(store: LogStore) -> str:
    return os.path.join(store.table_root, "_delta_log")


def local(store: LogStore, name: str) -> str:
    return os.path.join(log_dir(store), name)


def log_names(store: LogStore) -> list[str]:
    return sorted(os.listdir(log_dir(store)))


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
    before = os.stat(local(store, commit_name(0)))
    assert store.put_if_absent(0, b"second\n") is False
    assert store.read_commit(0) == b"first\n"
    assert os.stat(local(store, commit_name(0))).st_ino == before.st_ino
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
    assert os.path.getsize(local(store, commit_name(1))) == len(payload)


def test_list_from_filters_sorts_and_classifies(store):
    os.makedirs(log_dir(store))
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
        with open(local(store, n), "wb") as f:
            f.write(b"{}")
    os.makedirs(local(store, "_commits"))
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
    os.utime(local(store, commit_name(0)), ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
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
    s1, s2, s3 = resolve_table(plain), resolve_table(uri), resolve_table(plain + "/")
    assert s1.is_local and s2.is_local
    assert s1.root == s2.root == s3.root == plain
    # A commit written through one is read through the other.
    assert LogStore(s1).put_if_absent(0, b"v0\n")
    assert LogStore(s2).read_commit(0) == b"v0\n"
    assert os.path.exists(os.path.join(plain, "_delta_log", commit_name(0)))


def test_relative_paths_and_absolute_file_uris_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_table("rel/t").root == str(tmp_path / "rel" / "t")
    assert resolve_table(f"file://{tmp_path}/x").root == str(tmp_path / "x")


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
    os.makedirs(log_dir(store))
    with open(local(store, "_last_checkpoint"), "wb") as f:
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
