"""Version checksums (``NNN.crc``): one after every commit, equal to the state
a snapshot reconstructs, and checked when a snapshot's files are loaded.

The incremental derivation itself (delta-spark's ``computeNewChecksum``)
is checked the only way that can fail for real: every version's ``.crc``,
derived from the previous one plus the commit, against the checksum
recomputed from a full replay of that version.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import (
    DeletionVector,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
)
from airflow_delta_provider.delta.checkpoint.log_cleanup import cleanup_expired_logs
from airflow_delta_provider.delta.checksum import derive
from airflow_delta_provider.delta.checksum.histograms import FileSizeHistogram
from airflow_delta_provider.delta.checksum.validate import mismatches
from airflow_delta_provider.delta.checksum.version_checksum import VersionChecksum, checksum_name, read_checksum
from airflow_delta_provider.delta.errors import CorruptLogError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.transaction.post_commit import PostCommitHookProperties
from airflow_delta_provider.operations.restore.plan import restore_table

#: The vendored golden tables of delta-spark: tests/golden (delta-io/delta's) and tests/golden-4.4 (ours, by delta-spark 4.4).
GOLDEN = [Path(__file__).resolve().parents[2] / name for name in ("golden", "golden-4.4")]
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def _crc(root: Path, version: int) -> Path:
    return root / "_delta_log" / checksum_name(version)


def _append(table: DeltaTable, data_file: Any, ids: list[int], part: str = "a", **extra: Any) -> None:
    snap = table.snapshot()
    txn = table.transaction("WRITE", {"mode": "Append"}, snap)
    txn.add(data_file(table.root, pa.table({"id": ids}), {"part": part}))
    for action in extra.get("txns", []):
        txn.set_txn(action.app_id, action.version)
    txn.commit()


def _assert_checksums_match_replay(table: DeltaTable, root: Path) -> None:
    """Every version has a ``.crc`` whose values equal those of a full replay."""
    for version in range(table.latest_version() + 1):
        assert _crc(root, version).exists(), f"no checksum for version {version}"
        recorded = read_checksum(table.log_store, version)
        assert recorded is not None
        computed = table.snapshot(version).checksum()
        assert mismatches(recorded, computed) == [], version
        assert recorded.table_size_bytes == computed.table_size_bytes
        assert recorded.num_files == computed.num_files
        assert recorded.file_size_histogram == computed.file_size_histogram
        assert recorded.txn_id is not None


def test_every_commit_writes_a_checksum_equal_to_a_replay(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"], {"delta.checkpointInterval": "4"})
    table = DeltaTable(root)
    _append(table, data_file, [1, 2])
    _append(table, data_file, [3], "b")
    # txn, a remove, a metadata change and a domain in one commit each
    snap = table.snapshot()
    txn = table.transaction("STREAMING UPDATE", {}, snap)
    txn.set_txn("app-1", 7)
    txn.add(data_file(table.root, pa.table({"id": [4]}), {"part": "c"}))
    txn.commit()
    snap = table.snapshot()
    txn = table.transaction("DELETE", {}, snap)
    txn.add(snap.files[0].remove(1))
    txn.commit()
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    md = snap.metadata
    txn.update_metadata(Metadata(md.id, md.schema_string, md.partition_columns, {**md.configuration, "k": "v"}))
    txn.commit()
    restore_table(table, 2)
    _append(table, data_file, [5, 6, 7])  # version 7, after the checkpoint at 4
    _assert_checksums_match_replay(table, root)
    first = json.loads(_crc(root, 0).read_text())
    assert set(first) >= {"txnId", "tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "setTransactions"}
    assert set(first) >= {"domainMetadata", "metadata", "protocol", "fileSizeHistogram"}
    assert "allFiles" not in first
    txns = read_checksum(table.log_store, 3).set_transactions  # type: ignore[union-attr]
    assert [(t.app_id, t.version) for t in txns or []] == [("app-1", 7)]


def test_row_tracking_backfill_and_domains_stay_exact(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    """Turning row tracking on re-adds the live files (not new files) and
    writes the high-water mark domain; later writes move the mark."""
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1, 2])
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    md = snap.metadata
    txn.update_metadata(
        Metadata(md.id, md.schema_string, md.partition_columns, {**md.configuration, "delta.enableRowTracking": "true"})
    )
    txn.commit()
    _append(table, data_file, [3])
    _assert_checksums_match_replay(table, root)
    last = read_checksum(table.log_store, table.latest_version())
    assert last is not None and last.num_files == 2
    assert [d.domain for d in last.domain_metadata or []] == ["delta.rowTracking"]


def test_deletion_vector_counts(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    """A table that writes deletion vectors records how many rows they hide."""
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"], {"delta.enableDeletionVectors": "true"})
    table = DeltaTable(root)
    _append(table, data_file, [1, 2, 3])
    snap = table.snapshot()
    add = snap.files[0]
    dv = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 34, 2)
    txn = table.transaction("DELETE", {}, snap)
    txn.add(add.remove(1, data_change=True))
    txn.add(add.with_deletion_vector(dv, 3))
    txn.commit()
    _assert_checksums_match_replay(table, root)
    crc = json.loads(_crc(root, 2).read_text())
    assert crc["numDeletionVectorsOpt"] == 1
    assert crc["numDeletedRecordsOpt"] == 2
    assert crc["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"][1] == 1  # 1-9 deleted rows


def test_in_commit_timestamp_recorded(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"], {"delta.enableInCommitTimestamps": "true"})
    table = DeltaTable(root)
    _append(table, data_file, [1])
    crc = json.loads(_crc(root, 1).read_text())
    commit_info = json.loads((root / "_delta_log" / f"{1:020d}.json").read_text().splitlines()[0])["commitInfo"]
    assert crc["inCommitTimestampOpt"] == commit_info["inCommitTimestamp"]


def test_no_checksum_without_a_cheap_previous_state(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    """Without the previous ``.crc``, and with a read snapshot whose files were
    never loaded, no checksum is written (no full replay per commit); with
    the files loaded, the snapshot's state stands in."""
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1])
    _crc(root, 1).unlink()
    snap = table.snapshot()
    txn = table.transaction("WRITE", {}, snap)
    txn.add(data_file(table.root, pa.table({"id": [2]}), {"part": "a"}))
    txn.commit()
    assert not _crc(root, 2).exists()
    snap = table.snapshot()
    assert snap.num_files == 2  # loads the files
    txn = table.transaction("WRITE", {}, snap)
    txn.add(data_file(table.root, pa.table({"id": [3]}), {"part": "a"}))
    txn.commit()
    recorded = read_checksum(table.log_store, 3)
    assert recorded is not None and mismatches(recorded, table.snapshot(3).checksum()) == []


def test_a_failed_checksum_write_never_fails_the_commit(
    tmp_path: Path, new_table: Any, data_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    real = type(table.log_store).create_exclusive

    def failing(self: Any, name: str, data: bytes) -> bool:
        if name.endswith(".crc"):
            raise OSError("disk full")
        return real(self, name, data)

    monkeypatch.setattr(type(table.log_store), "create_exclusive", failing)
    _append(table, data_file, [1])
    assert table.latest_version() == 1
    assert not _crc(root, 1).exists()


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("numFiles", 7, "number of files"),
        ("tableSizeBytes", 1, "table size"),
        ("protocol", {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly"]}, "protocol"),
        ("setTransactions", [{"appId": "ghost", "version": 1}], "set transactions"),
    ],
)
def test_a_tampered_checksum_is_a_corrupt_log(
    tmp_path: Path, new_table: Any, data_file: Any, field: str, value: Any, named: str
) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1, 2])
    crc = json.loads(_crc(root, 1).read_text())
    crc[field] = value
    _crc(root, 1).write_text(json.dumps(crc))
    snap = table.snapshot()
    assert snap.protocol is not None  # protocol/metadata loads do not read the files, nor the .crc
    with pytest.raises(CorruptLogError, match=f"version 1 .*{named}"):
        _ = snap.files
    assert table.snapshot(0).num_files == 0  # other versions are fine


def test_a_tampered_histogram_is_a_corrupt_log(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1, 2])
    crc = json.loads(_crc(root, 1).read_text())
    counts = crc["fileSizeHistogram"]["fileCounts"]
    counts[0], counts[-1] = counts[-1], counts[0] + 1
    _crc(root, 1).write_text(json.dumps(crc))
    with pytest.raises(CorruptLogError, match=r"version 1 .*histogram"):
        _ = table.snapshot().num_files


def test_an_unreadable_checksum_is_passed_over(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    """As delta-spark's ``readChecksum``: a checksum is optional."""
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1])
    _crc(root, 1).write_text("{not json")
    assert table.snapshot().num_files == 1


def test_log_cleanup_removes_checksums_with_their_commits(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    """Expired commits go with their ``.crc`` (the cleanup itself:
    tests/delta/checkpoint/test_log_cleanup.py)."""
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"], {"delta.checkpointInterval": "3", "delta.enableExpiredLogCleanup": "false"})
    table = DeltaTable(root)
    for i in range(4):
        _append(table, data_file, [i])
    old = time.time() - 40 * 86_400
    for f in table.log_store.list_from(0):
        if f.version <= 3:
            os.utime(root / "_delta_log" / f.name, (old, old))
    cleanup_expired_logs(table, table.snapshot())
    kinds = [(f.version, f.kind) for f in table.log_store.list_from(0)]
    assert (2, "crc") not in kinds and (2, "commit") not in kinds
    assert {(3, "checkpoint"), (3, "crc"), (4, "crc")} <= set(kinds)
    assert table.snapshot().num_files == 4 and table.snapshot(3).num_files == 3  # both still validate


GOLDEN_WITH_CRC = sorted(
    {p.parent.parent for folder in GOLDEN for p in folder.glob("*/_delta_log/*.crc") if not p.name.startswith(".")}
)


def test_the_golden_tables_with_checksums_are_found() -> None:
    """Both vendored folders hold tables with ``.crc`` files: the test below is not empty."""
    assert {p.parent.name for p in GOLDEN_WITH_CRC} == {"golden", "golden-4.4"}


@pytest.mark.parametrize("golden", GOLDEN_WITH_CRC, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_checksums_validate(golden: Path, tmp_path: Path) -> None:
    """delta-spark's own ``.crc`` files agree with our replay, and tampering
    with one is caught: the validation really ran."""
    table = DeltaTable(golden)
    versions = sorted(int(p.stem) for p in (golden / "_delta_log").glob("*.crc") if not p.name.startswith("."))
    for version in versions:
        snap = table.snapshot(version)
        assert snap.segment.checksum is not None
        assert len(snap.files) == snap.num_files  # loading the files validates
        recorded = read_checksum(table.log_store, version)
        assert isinstance(recorded, VersionChecksum)
        assert mismatches(recorded, snap.checksum()) == []
    copy = tmp_path / golden.name
    shutil.copytree(golden, copy)
    crc_path = copy / "_delta_log" / checksum_name(versions[-1])
    crc = json.loads(crc_path.read_text())
    crc["numFiles"] += 1
    crc_path.write_text(json.dumps(crc))
    with pytest.raises(CorruptLogError, match=f"version {versions[-1]} "):
        _ = DeltaTable(copy).snapshot(versions[-1]).files


def test_deltalake_reads_a_table_with_our_checksums(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    _append(table, data_file, [1, 2])
    _append(table, data_file, [3], "b")
    assert _crc(root, 2).exists()
    dt = deltalake.DeltaTable(str(root))
    assert dt.version() == 2
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


def test_domain_metadata_over_the_limit_is_left_out() -> None:
    """delta-spark keeps at most 10 domains in a checksum, all or none; a
    removed domain leaves the list."""
    md = Metadata("id", '{"type":"struct","fields":[]}')
    base = derive.advance(derive.empty(), [md, Protocol(1, 2)], operation="CREATE TABLE")
    assert base is not None
    ten = derive.advance(base, [DomainMetadata(f"d{i}", "{}") for i in range(10)], operation="WRITE")
    assert ten is not None and len(ten.domain_metadata or []) == 10
    eleven = derive.advance(ten, [DomainMetadata("d10", "{}")], operation="WRITE")
    assert eleven is not None and eleven.domain_metadata is None
    nine = derive.advance(ten, [DomainMetadata("d0", "{}", removed=True)], operation="WRITE")
    assert nine is not None and {d.domain for d in nine.domain_metadata or []} == {f"d{i}" for i in range(1, 10)}


def test_a_remove_without_its_size_leaves_no_checksum() -> None:
    """delta-spark's ``ENCOUNTERED_REMOVE_FILE_MISSING_SIZE``."""
    md = Metadata("id", '{"type":"struct","fields":[]}')
    base = derive.advance(derive.empty(), [md, Protocol(1, 2)], operation="CREATE TABLE")
    assert base is not None
    assert derive.advance(base, [RemoveFile("x.parquet", 1)], operation="DELETE") is None


def test_post_commit_hooks_off_still_write_the_checksum(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    root = tmp_path / "t"
    new_table(root, SCHEMA, ["part"])
    table = DeltaTable(root)
    txn = table.transaction(
        "WRITE", {}, table.snapshot(), post_commit_hooks=PostCommitHookProperties(create_checkpoint=False)
    )
    txn.add(data_file(table.root, pa.table({"id": [1]}), {"part": "a"}))
    txn.commit()
    assert _crc(root, 1).exists()


def test_histogram_of_many_sizes_equals_one_insert_per_file() -> None:
    """The sorted cut :meth:`FileSizeHistogram.of` uses agrees with
    delta-spark's one-bin-search-per-file, bin edges included."""
    sizes = [0, 1, 8191, 8192, 8193, 2**38 - 1, 2**38, 2**38 + 5, *range(0, 2**33, 2**33 // 997)]
    one_by_one = FileSizeHistogram()
    for size in sizes:
        one_by_one.insert(size)
    assert FileSizeHistogram.of(sizes) == one_by_one
    assert FileSizeHistogram.of(sizes).file_counts[1] == 2  # 8192 and 8193: the bin [8 KB, 16 KB)
