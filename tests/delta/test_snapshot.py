"""Unit tests for ``delta/snapshot.py`` on hand-written logs.

Each test writes the exact ``_delta_log`` it needs (data files are not read
here), so the rules are checked one at a time: reconciliation, tombstone
expiry, ``txn`` per appId, typed partition values, ``stats`` and
``stats_parsed``, and the reader protocol gate.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import CorruptLogError, UnsupportedFeatureError
from airflow_delta_provider.delta.partitions import parse_partition_values
from airflow_delta_provider.delta.table import DeltaTable

DAY = 86_400_000

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def now_ms() -> int:
    return int(time.time() * 1000)


def protocol(r: int = 1, w: int = 2, **extra: Any) -> dict:
    return {"protocol": {"minReaderVersion": r, "minWriterVersion": w, **extra}}


def metadata(partition_columns=(), configuration=None, schema=SCHEMA) -> dict:
    return {
        "metaData": {
            "id": "test-id",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": list(partition_columns),
            "configuration": configuration or {},
            "createdTime": 1,
        }
    }


def add(path: str, pv: dict | None = None, size: int = 10, stats: dict | None = None, dv: dict | None = None) -> dict:
    body: dict[str, Any] = {"path": path, "partitionValues": pv or {}, "size": size, "modificationTime": 1, "dataChange": True}
    if stats is not None:
        body["stats"] = json.dumps(stats)
    if dv is not None:
        body["deletionVector"] = dv
    return {"add": body}


def remove(path: str, ts: int, dv: dict | None = None) -> dict:
    body: dict[str, Any] = {"path": path, "deletionTimestamp": ts, "dataChange": True}
    if dv is not None:
        body["deletionVector"] = dv
    return {"remove": body}


def write(root: Path, version: int, *actions: dict) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def paths(snapshot) -> list[str]:
    return sorted(f.path for f in snapshot.files)


def test_latest_snapshot_reconciles_adds_and_removes(tmp_path):
    write(tmp_path, 0, protocol(), metadata(), add("a", stats={"numRecords": 2}), add("b", stats={"numRecords": 3}))
    write(tmp_path, 1, remove("a", now_ms()), add("c", size=5, stats={"numRecords": 1}))
    write(tmp_path, 2, add("a", size=7, stats={"numRecords": 4}))
    snap = DeltaTable(tmp_path).snapshot()
    assert snap.version == 2
    assert paths(snap) == ["a", "b", "c"]
    assert {f.path: f.size for f in snap.files}["a"] == 7
    assert snap.all_tombstones == []  # the re-add cancelled the tombstone
    assert snap.num_files == 3 and snap.size_in_bytes == 22 and snap.num_records == 8
    assert snap.schema == SCHEMA and snap.partition_columns == []
    assert snap.metadata.id == "test-id" and snap.protocol.min_writer_version == 2


def test_snapshot_by_version(tmp_path):
    write(tmp_path, 0, protocol(), metadata(), add("a"))
    write(tmp_path, 1, add("b"))
    write(tmp_path, 2, remove("a", now_ms()))
    table = DeltaTable(tmp_path)
    assert [paths(table.snapshot(version=v)) for v in range(3)] == [["a"], ["a", "b"], ["b"]]


def test_num_records_is_none_unless_every_file_has_stats(tmp_path):
    write(tmp_path, 0, protocol(), metadata(), add("a", stats={"numRecords": 2}), add("b"))
    assert DeltaTable(tmp_path).snapshot().num_records is None


def test_files_are_keyed_on_path_and_dv_id(tmp_path):
    dv1 = {"storageType": "u", "pathOrInlineDv": "dv-one", "offset": 1, "sizeInBytes": 34, "cardinality": 1}
    write(tmp_path, 0, protocol(), metadata(), add("f"))
    write(tmp_path, 1, add("f", dv=dv1), remove("f", now_ms()))
    # delta-spark's DV delete: the DV'd add and the remove of the plain file are
    # two keys, so the file stays live (the key rule does not depend on the gate).
    snap = DeltaTable(tmp_path).snapshot()
    assert [(f.path, f.dv_id) for f in snap.files] == [("f", "udv-one@1")]
    assert [(r.path, r.dv_id) for r in snap.all_tombstones] == [("f", None)]


def test_tombstones_expire_by_deleted_file_retention_duration(tmp_path):
    now = now_ms()
    write(tmp_path, 0, protocol(), metadata(), add("old"), add("recent"), add("keep"))
    write(tmp_path, 1, remove("old", now - 8 * DAY), remove("recent", now - 6 * DAY))
    snap = DeltaTable(tmp_path).snapshot()
    assert [r.path for r in snap.tombstones] == ["recent"]
    assert sorted(r.path for r in snap.all_tombstones) == ["old", "recent"]
    # A longer retention keeps both; a shorter one neither.
    write(tmp_path, 2, metadata(configuration={"delta.deletedFileRetentionDuration": "interval 30 days"}))
    assert sorted(r.path for r in DeltaTable(tmp_path).snapshot().tombstones) == ["old", "recent"]
    write(tmp_path, 3, metadata(configuration={"delta.deletedFileRetentionDuration": "interval 1 days"}))
    assert DeltaTable(tmp_path).snapshot().tombstones == []


def test_txn_versions_are_tracked_per_app_id(tmp_path):
    write(tmp_path, 0, protocol(), metadata(), {"txn": {"appId": "a", "version": 1}})
    write(tmp_path, 1, {"txn": {"appId": "b", "version": 7}}, {"txn": {"appId": "a", "version": 2}})
    snap = DeltaTable(tmp_path).snapshot()
    assert (snap.txn_version("a"), snap.txn_version("b"), snap.txn_version("c")) == (2, 7, None)
    assert snap.txns == {"a": 2, "b": 7}
    assert DeltaTable(tmp_path).snapshot(version=0).txns == {"a": 1}


def test_domain_metadata_last_wins_and_removed_ones_go(tmp_path):
    write(tmp_path, 0, protocol(), metadata(), {"domainMetadata": {"domain": "x", "configuration": "1", "removed": False}})
    write(tmp_path, 1, {"domainMetadata": {"domain": "x", "configuration": "", "removed": True}},
          {"domainMetadata": {"domain": "y", "configuration": "2", "removed": False}})
    assert {k: d.configuration for k, d in DeltaTable(tmp_path).snapshot().domain_metadata.items()} == {"y": "2"}


def test_partition_values_are_typed_in_both_timestamp_forms(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
            {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
        ],
    }
    write(
        tmp_path, 0, protocol(), metadata(["ts", "d", "n"], schema=schema),
        add("legacy", {"ts": "2021-09-08 11:11:11", "d": "2021-09-08", "n": "3"}),
        add("iso", {"ts": "2021-09-08T11:11:11.000000Z", "d": "2021-09-08", "n": "3"}),
        add("null", {"ts": None, "d": "", "n": None}),
        add("other", {"ts": "2022-01-01 00:00:00.123456", "d": "2022-01-01", "n": "-4"}),
    )
    snap = DeltaTable(tmp_path).snapshot()
    typed = {f.path: parse_partition_values(f.partition_values, snap.schema, snap.partition_columns) for f in snap.files}
    moment = dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=dt.timezone.utc)
    assert typed["legacy"] == typed["iso"] == {"ts": moment, "d": dt.date(2021, 9, 8), "n": 3}
    assert typed["null"] == {"ts": None, "d": None, "n": None}
    assert typed["other"]["ts"] == dt.datetime(2022, 1, 1, 0, 0, 0, 123456, tzinfo=dt.timezone.utc)
    assert sorted(f.path for f in snap.files_matching("ts = '2021-09-08 11:11:11'")) == ["iso", "legacy"]
    assert [f.path for f in snap.files_matching("n < 0")] == ["other"]
    assert [f.path for f in snap.files_matching("d IS NULL")] == ["null"]


def test_files_matching_uses_stats_and_keeps_files_without_them(tmp_path):
    write(
        tmp_path, 0, protocol(), metadata(),
        add("low", stats={"numRecords": 2, "minValues": {"id": 0}, "maxValues": {"id": 4}, "nullCount": {"id": 0}}),
        add("high", stats={"numRecords": 2, "minValues": {"id": 5}, "maxValues": {"id": 9}, "nullCount": {"id": 0}}),
        add("nostats"),
    )
    snap = DeltaTable(tmp_path).snapshot()
    assert sorted(f.path for f in snap.files_matching("id > 6")) == ["high", "nostats"]
    assert len(snap.files_matching(None)) == 3


def test_file_path_is_absolute_and_uri_decoded(tmp_path):
    write(tmp_path, 0, protocol(), metadata(["p"]), add("p=a%20b/f%25.parquet", {"p": "a b"}))
    snap = DeltaTable(tmp_path).snapshot()
    assert snap.file_path(snap.files[0]) == str(tmp_path / "p=a b" / "f%.parquet")


# --- stats and stats_parsed in a checkpoint -----------------------------------

_MAP = pa.map_(pa.string(), pa.string())


def _write_checkpoint_with_stats_parsed(root: Path, version: int) -> None:
    """A delta-spark style checkpoint written with ``writeStatsAsStruct`` on one
    file (``stats_parsed``, no JSON) and ``writeStatsAsJson`` on the other."""
    bounds = pa.struct([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC"))])
    stats_parsed = pa.struct(
        [("numRecords", pa.int64()), ("minValues", bounds), ("maxValues", bounds),
         ("nullCount", pa.struct([("id", pa.int64()), ("ts", pa.int64())]))]
    )
    add_type = pa.struct(
        [("path", pa.string()), ("partitionValues", _MAP), ("size", pa.int64()), ("modificationTime", pa.int64()),
         ("dataChange", pa.bool_()), ("stats", pa.string()), ("stats_parsed", stats_parsed)]
    )
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    md = metadata(schema={"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    ]})["metaData"]
    md["configuration"] = []
    md["format"] = {"provider": "parquet", "options": []}
    table = pa.table(
        {
            "protocol": pa.array([{"minReaderVersion": 1, "minWriterVersion": 2}, None, None, None],
                                 pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())])),
            "metaData": pa.array([None, md, None, None], pa.struct([
                ("id", pa.string()), ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())), ("configuration", _MAP),
                ("createdTime", pa.int64())])),
            "add": pa.array([
                None, None,
                {"path": "parsed.parquet", "partitionValues": [], "size": 3, "modificationTime": 1, "dataChange": False,
                 "stats": None, "stats_parsed": {"numRecords": 4, "minValues": {"id": 10, "ts": ts},
                                                 "maxValues": {"id": 19, "ts": ts}, "nullCount": {"id": 0, "ts": 1}}},
                {"path": "json.parquet", "partitionValues": [], "size": 5, "modificationTime": 2, "dataChange": False,
                 "stats": json.dumps({"numRecords": 7, "minValues": {"id": 0}, "maxValues": {"id": 9}, "nullCount": {"id": 0}}),
                 "stats_parsed": None},
            ], add_type),
        }
    )
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, log / f"{version:020d}.checkpoint.parquet")


def test_checkpoint_stats_and_stats_parsed_are_both_read(tmp_path):
    _write_checkpoint_with_stats_parsed(tmp_path, 0)
    snap = DeltaTable(tmp_path).snapshot()
    files = {f.path: f for f in snap.files}
    assert files["parsed.parquet"].stats is None
    assert files["parsed.parquet"].parsed_stats() == {
        "numRecords": 4,
        "minValues": {"id": 10, "ts": "2024-01-02T03:04:05.000Z"},
        "maxValues": {"id": 19, "ts": "2024-01-02T03:04:05.000Z"},
        "nullCount": {"id": 0, "ts": 1},
    }
    assert snap.num_records == 11 and snap.size_in_bytes == 8
    assert [f.path for f in snap.files_matching("id > 12")] == ["parsed.parquet"]
    assert [f.path for f in snap.files_matching("id < 5")] == ["json.parquet"]


def test_commits_after_a_checkpoint_override_its_rows(tmp_path):
    _write_checkpoint_with_stats_parsed(tmp_path, 0)
    write(tmp_path, 1, remove("parsed.parquet", now_ms()), add("new.parquet", size=1, stats={"numRecords": 1}))
    snap = DeltaTable(tmp_path).snapshot()
    assert paths(snap) == ["json.parquet", "new.parquet"]
    assert [r.path for r in snap.tombstones] == ["parsed.parquet"]
    assert snap.num_files == 2 and snap.size_in_bytes == 6 and snap.num_records == 8


def test_a_checkpoints_file_actions_are_read_on_first_use(tmp_path):
    """Loading needs the checkpoint's protocol and metadata only; its adds are
    read when files are asked for. Proven by removing the checkpoint between
    the two: the load has what it needs, the files then name the lost file."""
    from airflow_delta_provider.delta.errors import CorruptCheckpointError

    _write_checkpoint_with_stats_parsed(tmp_path, 0)
    write(tmp_path, 1, add("new.parquet", size=1))
    snap = DeltaTable(tmp_path).snapshot()
    assert snap.version == 1 and snap.protocol.min_reader_version == 1 and snap.schema["fields"][0]["name"] == "id"
    checkpoint = tmp_path / "_delta_log" / f"{0:020d}.checkpoint.parquet"
    checkpoint.rename(tmp_path / "moved.parquet")
    with pytest.raises(CorruptCheckpointError, match=rf"checkpoint {checkpoint.name} disappeared"):
        snap.file_paths()
    (tmp_path / "moved.parquet").rename(checkpoint)
    assert paths(snap) == ["json.parquet", "new.parquet", "parsed.parquet"]


def test_the_file_state_is_built_once_under_concurrent_readers(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    _write_checkpoint_with_stats_parsed(tmp_path, 0)
    write(tmp_path, 1, remove("parsed.parquet", now_ms()), add("new.parquet", size=1))
    snap = DeltaTable(tmp_path).snapshot()
    with ThreadPoolExecutor(8) as pool:
        counts = set(pool.map(lambda _: (snap.num_files, len(snap.file_paths()), snap.size_in_bytes), range(32)))
    assert counts == {(2, 2, 6)}


# --- the reader protocol gate and damaged logs --------------------------------


@pytest.mark.parametrize(
    ("proto", "feature"),
    [
        (protocol(3, 7, readerFeatures=["deletionVectors", "catalogManaged"], writerFeatures=["deletionVectors"]),
         "catalogManaged"),
        # timestampNtz is read; a feature from the future is not.
        (
            protocol(3, 7, readerFeatures=["timestampNtz", "futureFeature"], writerFeatures=["timestampNtz", "futureFeature"]),
            "futureFeature",
        ),
        (protocol(4, 7), "reader version 4"),
    ],
)
def test_reader_gate_names_the_feature(tmp_path, proto, feature):
    write(tmp_path, 0, protocol(), metadata(), add("a"))
    write(tmp_path, 1, proto)
    table = DeltaTable(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match=feature):
        table.snapshot()
    assert paths(table.snapshot(version=0)) == ["a"]


def test_golden_invalid_protocol_version_names_it(golden_dir):
    with pytest.raises(UnsupportedFeatureError, match="99"):
        DeltaTable(golden_dir / "deltalog-invalid-protocol-version").snapshot()


@pytest.mark.parametrize(("missing", "name"), [("protocol", "protocol"), ("metaData", "metaData")])
def test_missing_protocol_or_metadata_is_corrupt_naming_it(tmp_path, missing, name):
    actions = [a for a in (protocol(), metadata(), add("a")) if missing not in a]
    write(tmp_path, 0, *actions)
    with pytest.raises(CorruptLogError, match=name):
        DeltaTable(tmp_path).snapshot()


def test_unparseable_commit_is_corrupt(tmp_path):
    write(tmp_path, 0, protocol(), metadata())
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text('{"add": {"path": "x", "partitionVal')
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json"):
        DeltaTable(tmp_path).snapshot()


def test_torn_checkpoint_with_stale_hint_falls_back_to_commits(golden_dir, tmp_path):
    table = tmp_path / "t"
    shutil.copytree(golden_dir / "checkpoint", table)
    expected = paths(DeltaTable(table).snapshot())
    cp = table / "_delta_log" / f"{10:020d}.checkpoint.parquet"
    cp.write_bytes(cp.read_bytes()[:100])
    snap = DeltaTable(table).snapshot()
    assert snap.version == 14 and paths(snap) == expected
    assert snap.segment.checkpoint_version is None


def test_timestamp_of_a_checkpointed_version_is_its_commit_time(tmp_path):
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    write(tmp_path, 0, protocol(), metadata(), add("a"))
    commit_time = 1_700_000_000
    os.utime(tmp_path / "_delta_log" / f"{0:020d}.json", (commit_time, commit_time))
    table = DeltaTable(tmp_path)
    assert table.snapshot().timestamp == commit_time * 1000
    write_checkpoint(table, table.snapshot())  # written "later", as a CHECKPOINT command would
    assert table.snapshot().segment.checkpoint_version == 0
    assert table.snapshot().timestamp == commit_time * 1000
