"""Deletion vectors in the core (delta/deletion_vectors.py): Z85, the DV file
format, the three storage types, damaged vectors, and tables whose files
carry vectors, read by us, by delta-rs and by DuckDB (delta-kernel-rs).

The encoders below write test fixtures only. They are the inverse of the
module's decoders, built on the same primitives (the stdlib's base85 with
Z85's alphabet, pyroaring's portable serialization, zlib's CRC-32); delta-spark's
own vectors (the golden tables) and delta-kernel's reading of ours check them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import time
import uuid
import zlib
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

from airflow_delta_provider.delta.actions.deletion_vectors import (
    PORTABLE_MAGIC,
    Z85_ALPHABET,
    DeletionVectorReader,
    deleted_row_indexes,
    dv_location,
    read_deletion_vector,
    relative_dv_path,
    z85_decode,
)
from airflow_delta_provider.delta.actions.model import AddFile, DeletionVector, RemoveFile
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import CorruptDeletionVectorError, CorruptLogError
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.table import DeltaTable

# --- fixture encoders ------------------------------------------------------------------

_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_TO_Z85 = str.maketrans(_B85, Z85_ALPHABET)


def z85_encode(data: bytes) -> str:
    """Z85 of ``data`` zero-padded to a multiple of 4 bytes, as delta-spark's Base85Codec pads."""
    data += b"\0" * (-len(data) % 4)
    return base64.b85encode(data).decode().translate(_TO_Z85)


def bitmap_bytes(rows: Iterable[int]) -> bytes:
    """A ``RoaringBitmapArray`` in the portable format: magic, then the 64-bit portable bitmap."""
    return struct.pack("<I", PORTABLE_MAGIC) + BitMap64(rows).serialize()


def dv_file_bytes(*payloads: bytes) -> tuple[bytes, list[int]]:
    """A DV file holding ``payloads``, and the offset of each."""
    out, offsets = bytearray([1]), []
    for payload in payloads:
        offsets.append(len(out))
        out += struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    return bytes(out), offsets


def uuid_dv(root: Path, rows: Iterable[int], prefix: str = "") -> DeletionVector:
    """A ``u`` vector in a new file under ``root`` (in folder ``prefix``)."""
    rows = list(rows)
    payload = bitmap_bytes(rows)
    data, (offset,) = dv_file_bytes(payload)
    file_id = uuid.uuid4()
    folder = root / prefix if prefix else root
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"deletion_vector_{file_id}.bin").write_bytes(data)
    return DeletionVector("u", prefix + z85_encode(file_id.bytes), len(payload), len(rows), offset=offset)


def inline_dv(rows: Iterable[int]) -> DeletionVector:
    rows = list(rows)
    payload = bitmap_bytes(rows)
    return DeletionVector("i", z85_encode(payload), len(payload), len(rows))


def absolute_dv(path: Path, rows: Iterable[int], uri: str | None = None) -> DeletionVector:
    """A ``p`` vector in a file at ``path``, named by ``uri`` (default: the ``file:`` URI)."""
    rows = list(rows)
    payload = bitmap_bytes(rows)
    data, (offset,) = dv_file_bytes(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return DeletionVector("p", uri or path.as_uri(), len(payload), len(rows), offset=offset)


# --- Z85 -----------------------------------------------------------------------------


def test_z85_decodes_the_rfc_test_vector():
    # ZeroMQ RFC 32: these 8 bytes are "HelloWorld".
    assert z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert z85_decode("") == b""


@pytest.mark.parametrize("size", [0, 4, 16, 40, 400])
def test_z85_round_trips(size):
    data = os.urandom(size)
    assert z85_decode(z85_encode(data)) == data


@pytest.mark.parametrize(
    "text, message",
    [
        ("Hello", None),  # valid, a control
        ("Hell", "multiple of 5"),
        ("Hell~", "not Z85"),  # '~' is base85 (RFC 1924), not Z85
        ("Hell,", "not Z85"),
        ("#####", "overflow|range|bad"),  # 85^5 - 1 > 2^32 - 1
    ],
)
def test_z85_refuses_bad_text(text, message):
    if message is None:
        assert len(z85_decode(text)) == 4
        return
    with pytest.raises(ValueError, match=message):
        z85_decode(text)


# --- where a vector lives ----------------------------------------------------------


def test_uuid_path_with_a_random_prefix_protocol_example():
    dv = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, offset=4)
    assert relative_dv_path(dv) == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert dv_location(dv, "s3://mytable") == "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert dv_location(dv, "/t") == "/t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"


def test_uuid_path_without_prefix_and_other_storage_types():
    file_id = uuid.uuid4()
    assert relative_dv_path(DeletionVector("u", z85_encode(file_id.bytes), 1, 1)) == f"deletion_vector_{file_id}.bin"
    assert dv_location(DeletionVector("i", "00000", 1, 1), "/t") is None
    assert dv_location(DeletionVector("p", "file:/x/a%20b.bin", 1, 1), "/t") == "/x/a b.bin"
    assert dv_location(DeletionVector("p", "s3a://bkt/t/d.bin", 1, 1), "s3://bkt/t") == "s3://bkt/t/d.bin"


@pytest.mark.parametrize("encoded", ["short", "ab" + "~" * 20])
def test_malformed_uuid_path_is_a_corrupt_vector(encoded):
    with pytest.raises(CorruptDeletionVectorError, match="Z85 UUID"):
        relative_dv_path(DeletionVector("u", encoded, 1, 1))


def test_unknown_storage_type_is_a_corrupt_vector(tmp_path):
    with pytest.raises(CorruptDeletionVectorError, match="storage type 'x'"):
        read_deletion_vector(open_storage(str(tmp_path)), DeletionVector("x", "abc", 1, 1))


# --- reading each storage type -------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "q7"])
def test_uuid_vector_is_read_through_the_storage(tmp_path, prefix):
    dv = uuid_dv(tmp_path, [0, 3, 9, 65_536, 2**31 + 1], prefix)
    storage = open_storage(str(tmp_path))
    assert list(read_deletion_vector(storage, dv)) == [0, 3, 9, 65_536, 2**31 + 1]
    indexes = deleted_row_indexes(storage, dv)
    assert indexes.type == pa.uint64() and indexes.to_pylist() == [0, 3, 9, 65_536, 2**31 + 1]


def test_inline_vector_protocol_rows():
    dv = inline_dv([3, 4, 7, 11, 18, 29])  # the rows of PROTOCOL.md's inline example
    assert len(dv.path_or_inline_dv) % 5 == 0 and dv.offset is None
    assert list(read_deletion_vector(open_storage("/nonexistent-root"), dv)) == [3, 4, 7, 11, 18, 29]


def test_inline_vector_in_the_pre_release_format_is_refused_naming_the_magic():
    # PROTOCOL.md's inline example predates the portable format delta-spark writes
    # (its magic is big-endian 1681511376); delta-kernel refuses it too.
    dv = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    with pytest.raises(CorruptDeletionVectorError, match="magic number"):
        read_deletion_vector(open_storage("/nonexistent-root"), dv)


def test_absolute_path_vectors_inside_and_outside_the_root(tmp_path):
    root, elsewhere = tmp_path / "t", tmp_path / "elsewhere"
    root.mkdir()
    storage = open_storage(str(root))
    inside = absolute_dv(root / "dvs" / "one vector.bin", [1, 2])  # file: URI, percent-encoded
    plain = absolute_dv(root / "dvs" / "plain.bin", [5], uri=str(root / "dvs" / "plain.bin"))
    outside = absolute_dv(elsewhere / "other.bin", [7, 8, 9])
    assert "%20" in inside.path_or_inline_dv
    assert list(read_deletion_vector(storage, inside)) == [1, 2]
    assert list(read_deletion_vector(storage, plain)) == [5]
    assert list(read_deletion_vector(storage, outside)) == [7, 8, 9]


def test_64_bit_row_indexes_and_empty_buckets(tmp_path):
    """delta-spark's RoaringBitmapArray writes every bucket up to the highest,
    empty ones included (portable layout: count, then key + 32-bit bitmap)."""
    layout = struct.pack("<Q", 3)
    for key, rows in ((0, [4]), (1, []), (2, [0, 99])):
        layout += struct.pack("<I", key) + BitMap(rows).serialize()
    payload = struct.pack("<I", PORTABLE_MAGIC) + layout
    dv = DeletionVector("i", z85_encode(payload), len(payload), 3)
    assert list(read_deletion_vector(open_storage(str(tmp_path)), dv)) == [4, 2 * 2**32, 2 * 2**32 + 99]


def test_one_file_holds_many_vectors_and_is_fetched_once(tmp_path):
    payloads = [bitmap_bytes([1]), bitmap_bytes(range(0, 3000, 3)), bitmap_bytes([2**33])]
    data, offsets = dv_file_bytes(*payloads)
    file_id = uuid.uuid4()
    (tmp_path / f"deletion_vector_{file_id}.bin").write_bytes(data)
    dvs = [
        DeletionVector("u", z85_encode(file_id.bytes), len(p), n, offset=o)
        for p, o, n in zip(payloads, offsets, (1, 1000, 1))
    ]
    storage = open_storage(str(tmp_path))
    fetched = []
    original_get = storage.get
    storage.get = lambda path: fetched.append(path) or original_get(path)  # count the reads
    reader = DeletionVectorReader(storage)
    got = [list(reader.read(dv)) for dv in dvs]
    assert got == [[1], list(range(0, 3000, 3)), [2**33]]
    assert fetched == [f"deletion_vector_{file_id}.bin"]


# --- damaged vectors ------------------------------------------------------------------


def _corrupt(tmp_path: Path, damage) -> tuple[DeletionVector, str]:
    """A ``u`` vector whose file ``damage(bytearray)`` changed; returns it and its file name."""
    dv = uuid_dv(tmp_path, [1, 5, 9])
    name = relative_dv_path(dv)
    data = bytearray((tmp_path / name).read_bytes())
    damage(data)
    (tmp_path / name).write_bytes(bytes(data))
    return dv, name


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d.__setitem__(-6, d[-6] ^ 0xFF), "CRC-32 mismatch"),  # a bitmap byte
        (lambda d: d.__setitem__(-1, d[-1] ^ 0x01), "CRC-32 mismatch"),  # the stored checksum
        (lambda d: d.__setitem__(0, 2), "format version 2"),
        (lambda d: d.__setitem__(slice(1, 5), struct.pack(">i", 7)), "the file says the vector is 7 bytes"),
        (lambda d: d.__delitem__(slice(-3, None)), "past the end of the file"),
        (lambda d: d.__delitem__(slice(None)), "empty"),
    ],
    ids=["bitmap-byte", "checksum", "version", "size", "truncated", "empty"],
)
def test_damaged_file_is_a_corrupt_vector_naming_the_file(tmp_path, damage, message):
    dv, name = _corrupt(tmp_path, damage)
    with pytest.raises(CorruptDeletionVectorError, match=message) as info:
        read_deletion_vector(open_storage(str(tmp_path)), dv, "part-0.parquet")
    assert name in str(info.value) and "part-0.parquet" in str(info.value)
    assert isinstance(info.value, CorruptLogError)


def test_missing_file_is_a_corrupt_vector_naming_the_file(tmp_path):
    dv = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, offset=1)
    with pytest.raises(CorruptDeletionVectorError, match="does not exist") as info:
        read_deletion_vector(open_storage(str(tmp_path)), dv, "f.parquet")
    assert str(tmp_path / "ab" / "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin") in str(info.value)


def _payload_dv(tmp_path: Path, payload: bytes, cardinality: int) -> DeletionVector:
    data, (offset,) = dv_file_bytes(payload)  # a valid frame and CRC around a bad payload
    file_id = uuid.uuid4()
    (tmp_path / f"deletion_vector_{file_id}.bin").write_bytes(data)
    return DeletionVector("u", z85_encode(file_id.bytes), len(payload), cardinality, offset=offset)


@pytest.mark.parametrize(
    "payload, cardinality, message",
    [
        (struct.pack("<I", PORTABLE_MAGIC - 1) + BitMap64([1]).serialize(), 1, "magic number 1681511376"),
        (struct.pack("<I", PORTABLE_MAGIC) + b"\x05\x00\x00\x00\x00\x00\x00\x00garbage", 1, "cannot be decoded"),
        (struct.pack("<I", PORTABLE_MAGIC), 0, "cannot be decoded"),
        (b"\x01\x02", 0, "cannot hold a bitmap"),
        (bitmap_bytes([1, 2, 3]), 2, "holds 3 rows, the descriptor's cardinality is 2"),
    ],
    ids=["magic", "garbled", "no-bitmap", "too-short", "cardinality"],
)
def test_bad_bitmap_is_a_corrupt_vector(tmp_path, payload, cardinality, message):
    dv = _payload_dv(tmp_path, payload, cardinality)
    with pytest.raises(CorruptDeletionVectorError, match=message) as info:
        read_deletion_vector(open_storage(str(tmp_path)), dv)
    assert relative_dv_path(dv) in str(info.value)


def test_bad_inline_vector_is_a_corrupt_vector():
    storage = open_storage("/nonexistent-root")
    with pytest.raises(CorruptDeletionVectorError, match=r"inline deletion vector of f\.parquet: inline data is not Z85"):
        read_deletion_vector(storage, DeletionVector("i", "abc", 3, 1), "f.parquet")
    short = inline_dv([1])
    with pytest.raises(CorruptDeletionVectorError, match="the descriptor says 400"):
        read_deletion_vector(storage, DeletionVector("i", short.path_or_inline_dv, 400, 1))


# --- tables with deletion vectors ---------------------------------------------------

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "p", "type": "string", "nullable": True, "metadata": {}}]}
DV_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7,
               "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}


def _now() -> int:
    return int(time.time() * 1000)


def _commit(root: Path, version: int, *actions: dict) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def _with_dv(add: AddFile, dv: DeletionVector) -> AddFile:
    return AddFile(add.path, add.partition_values, add.size, add.modification_time, True, add.stats,
                   deletion_vector=dv)


@pytest.fixture
def dv_table(tmp_path, data_file):
    """A partitioned table on the deletionVectors feature, written by hand:
    v0 three files; v1 DVs of all three storage types (u with a prefix, i, p);
    v2 a wider vector for one file (add (f, dv2) + remove (f, dv1))."""
    root = tmp_path / "t"
    root.mkdir()
    files = [
        data_file(root, pa.table({"id": list(range(start, start + 10))}), {"p": p}, {"p": "string"})
        for start, p in ((0, "a"), (10, "a"), (20, "b"))
    ]
    _commit(root, 0, {"commitInfo": {"timestamp": _now(), "operation": "WRITE"}}, {"protocol": DV_PROTOCOL},
            {"metaData": {"id": "dv-test", "format": {"provider": "parquet", "options": {}},
                          "schemaString": json.dumps(SCHEMA), "partitionColumns": ["p"],
                          "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": _now()}},
            *({"add": f.to_json()} for f in files))
    dvs = [uuid_dv(root, [0, 9], prefix="xy"), inline_dv([1, 2, 3]), absolute_dv(root / "abs_dv.bin", [5])]
    v1 = [_with_dv(f, dv) for f, dv in zip(files, dvs)]
    _commit(root, 1, {"commitInfo": {"timestamp": _now(), "operation": "DELETE"}},
            *({"add": a.to_json()} for a in v1), *({"remove": f.remove(_now()).to_json()} for f in files))
    wider = _with_dv(files[0], uuid_dv(root, [0, 4, 9]))
    _commit(root, 2, {"commitInfo": {"timestamp": _now(), "operation": "DELETE"}},
            {"add": wider.to_json()}, {"remove": v1[0].remove(_now()).to_json()})
    return root


EXPECTED_IDS = {
    0: set(range(30)),
    1: set(range(30)) - {0, 9, 11, 12, 13, 25},
    2: set(range(30)) - {0, 4, 9, 11, 12, 13, 25},
}


def _oracles(root: Path, version: int, duckdb_delta) -> tuple[list[int], list[int]]:
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    rs = pa.table(QueryBuilder().register("t", RsTable(str(root), version=version)).execute("SELECT id FROM t").read_all())
    duck = duckdb_delta.execute(f"SELECT id FROM delta_scan('{root}', version => {version})").fetch_arrow_table()
    return sorted(rs.column("id").to_pylist()), sorted(duck.column("id").to_pylist())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_dv_table_rows_match_delta_rs_and_duckdb(dv_table, version, snapshot_rows, duckdb_delta):
    snap = DeltaTable(dv_table).snapshot(version=version)
    got = sorted(snapshot_rows(snap).column("id").to_pylist())
    assert set(got) == EXPECTED_IDS[version] and len(got) == len(EXPECTED_IDS[version])
    assert snap.num_records == len(got)
    by_rs, by_duckdb = _oracles(dv_table, version, duckdb_delta)
    assert got == by_rs == by_duckdb


def test_same_path_with_a_new_dv_replaces_the_old_add(dv_table):
    snap = DeltaTable(dv_table).snapshot()
    assert snap.num_files == 3 and len({a.path for a in snap.files}) == 3
    by_type = {a.deletion_vector.storage_type: a for a in snap.files}
    assert set(by_type) == {"u", "i", "p"}
    assert list(snap.deleted_rows(by_type["u"])) == [0, 4, 9]
    # Tombstones: each file without a DV, and the first file with its first DV.
    assert sorted((t.path, t.deletion_vector is None) for t in snap.tombstones) == sorted(
        [(a.path, True) for a in snap.files] + [(by_type["u"].path, False)]
    )


def test_same_path_with_a_new_dv_replaces_an_add_from_a_checkpoint(dv_table, snapshot_rows, duckdb_delta):
    """The key (path, DV id) also holds when the old add sits in a checkpoint
    (read columnar) and the commit replacing it comes after."""
    table = DeltaTable(dv_table)
    write_checkpoint(table, table.snapshot(version=1))
    for name in ("00000000000000000000.json",):
        (dv_table / "_delta_log" / name).unlink()
    (dv_table / "_delta_log" / "_last_checkpoint").unlink()  # found by listing
    snap = table.snapshot()
    assert snap.version == 2 and snap.segment.checkpoint_files
    assert sorted(a.dv_id for a in snap.files) == sorted(a.dv_id for a in DeltaTable(dv_table).snapshot().files)
    got = sorted(snapshot_rows(snap).column("id").to_pylist())
    assert set(got) == EXPECTED_IDS[2]
    assert got == _oracles(dv_table, 2, duckdb_delta)[1]


def test_dv_table_takes_writes_and_keeps_its_vectors(dv_table):
    table = DeltaTable(dv_table)
    snap = table.snapshot()
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
    assert txn.commit(metrics={}).version == snap.version + 1
    after = table.snapshot()
    assert [(f.path, f.dv_id) for f in after.files] == [(f.path, f.dv_id) for f in snap.files]
    assert after.num_records == snap.num_records


def test_written_vectors_read_back_and_frame_like_delta_spark(tmp_path):
    """One file holds many vectors; each descriptor finds its own, CRC checked."""
    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import (
        DeletionVectorFile,
        DeletionVectorReader,
        z85_decode,
        z85_encode,
    )
    from airflow_delta_provider.delta.storage import open_storage

    assert z85_decode(z85_encode(bytes(range(16)))) == bytes(range(16))
    vectors = DeletionVectorFile()
    bitmaps = [BitMap64([0, 5, 2**32 + 1]), BitMap64(range(0, 100_000, 3)), BitMap64([7])]
    descriptors = [vectors.add(b) for b in bitmaps]
    storage = open_storage(str(tmp_path))
    storage.put(vectors.path, vectors.data())
    assert vectors.data()[0] == 1 and descriptors[0].offset == 1
    assert relative_dv_path(descriptors[1]) == vectors.path
    reader = DeletionVectorReader(storage)
    for d, b in zip(descriptors, bitmaps):
        assert (d.storage_type, d.cardinality) == ("u", len(b))
        assert reader.read(d) == b


def test_corrupt_vector_in_a_table_names_the_data_file_and_the_dv_file(dv_table, snapshot_rows):
    snap = DeltaTable(dv_table).snapshot()
    (u_file,) = [a for a in snap.files if a.deletion_vector.storage_type == "u"]
    dv_path = dv_table / relative_dv_path(u_file.deletion_vector)
    data = bytearray(dv_path.read_bytes())
    data[-6] ^= 0xFF
    dv_path.write_bytes(bytes(data))
    with pytest.raises(CorruptDeletionVectorError) as info:
        snapshot_rows(DeltaTable(dv_table).snapshot())
    assert u_file.path in str(info.value) and str(dv_path) in str(info.value) and "CRC" in str(info.value)
    os.unlink(dv_path)
    with pytest.raises(CorruptDeletionVectorError, match="does not exist"):
        snapshot_rows(DeltaTable(dv_table).snapshot())


def test_golden_vectors_all_decode_with_their_cardinality(golden_dir, tmp_path):
    """Every vector delta-spark wrote in the golden tables, on adds and removes,
    at every version (the reader checks size, CRC, magic and cardinality)."""
    from airflow_delta_provider.delta.actions.model import parse_commit

    seen = 0
    for name in ("dv-partitioned-with-checkpoint", "log-replay-dv-key-cases", "dv-with-columnmapping"):
        root = golden_dir / name
        reader = DeletionVectorReader(open_storage(str(root)))
        for commit in sorted((root / "_delta_log").glob("*.json")):
            for action in parse_commit(commit.read_bytes()):
                if isinstance(action, (AddFile, RemoveFile)) and action.deletion_vector is not None:
                    rows = reader.read(action.deletion_vector, action.path)
                    assert len(rows) == action.deletion_vector.cardinality > 0
                    seen += 1
    assert seen > 30


def test_reading_a_dv_table_copied_elsewhere(dv_table, tmp_path, snapshot_rows):
    """``u`` and ``i`` vectors travel with the table; the ``p`` one names its old place."""
    copy = tmp_path / "copy"
    shutil.copytree(dv_table, copy)
    snap = DeltaTable(copy).snapshot()
    p_file = next(a for a in snap.files if a.deletion_vector.storage_type == "p")
    assert dv_location(p_file.deletion_vector, snap.table_root).startswith(str(dv_table))
    assert sorted(snapshot_rows(snap).column("id").to_pylist()) == sorted(EXPECTED_IDS[2])
