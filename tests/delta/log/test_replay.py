"""Unit tests for ``delta/replay.py``: action reconciliation and checkpoint rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import (
    AddFile,
    DeletionVector,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_commit,
)
from airflow_delta_provider.delta.errors import CorruptCheckpointError
from airflow_delta_provider.delta.log.replay import LogReplay, PathCanonicalizer

ROOT = "/data/t"
SCHEMA = '{"type":"struct","fields":[]}'


def add(path: str, dv: DeletionVector | None = None, **kw) -> AddFile:
    return AddFile(path, {}, kw.pop("size", 1), 1, deletion_vector=dv, **kw)


def dv(name: str) -> DeletionVector:
    return DeletionVector("u", name, 10, 1, offset=1)


def test_last_protocol_and_metadata_win():
    r = LogReplay(ROOT)
    m1, m2 = Metadata("a", SCHEMA), Metadata("b", SCHEMA, configuration={"k": "v"})
    r.apply([Protocol(1, 1), m1, Protocol(1, 2), m2])
    assert (r.protocol, r.metadata) == (Protocol(1, 2), m2)


def test_newest_file_action_wins_and_a_re_add_cancels_the_tombstone():
    r = LogReplay(ROOT)
    r.apply([add("a"), add("b")])
    r.apply([add("a").remove(5)])
    assert set(r.files) == {("b", None)} and set(r.tombstones) == {("a", None)}
    r.apply([add("a", size=7)])
    assert r.files[("a", None)].size == 7 and r.tombstones == {}


def test_files_are_keyed_on_path_and_deletion_vector_id():
    r = LogReplay(ROOT)
    r.apply([add("f")])
    # delta-spark's DELETE with DVs: add (f, dv1) and remove (f, no dv) in one commit.
    r.apply([add("f", dv("one")), add("f").remove(1)])
    assert list(r.files) == [("f", dv("one").unique_id)]
    r.apply([add("f", dv("two")), add("f", dv("one")).remove(2)])
    assert list(r.files) == [("f", dv("two").unique_id)]
    assert set(r.tombstones) == {("f", None), ("f", dv("one").unique_id)}


def test_golden_log_replay_dv_key_cases(golden_dir):
    """delta-spark's own DV key cases, replayed action by action (no snapshot)."""
    log = Path(golden_dir) / "log-replay-dv-key-cases" / "_delta_log"
    r = LogReplay(str(log.parent))
    for f in sorted(log.glob("*.json")):
        r.apply(parse_commit(f.read_bytes()))
    assert len(r.files) == 1
    ((path, dv_id), live) = next(iter(r.files.items()))
    assert path.startswith("part-00000-90177277") and dv_id == live.deletion_vector.unique_id
    assert live.deletion_vector.path_or_inline_dv == "^jP?.<zvDfIGb{C.FPij"
    assert len(r.tombstones) == 3  # no dv, dv1, dv2


def test_golden_delete_re_add_same_file(golden_dir):
    log = Path(golden_dir) / "delete-re-add-same-file-different-transactions" / "_delta_log"
    r = LogReplay(str(log.parent))
    for f in sorted(log.glob("*.json")):
        r.apply(parse_commit(f.read_bytes()))
    assert sorted(p for p, _ in r.files) == ["bar", "foo"]
    assert r.files[("foo", None)].modification_time == 1700000000000
    assert r.tombstones == {}


@pytest.mark.parametrize(
    "spelling",
    ["a%20b/f.parquet", "/data/t/a b/f.parquet", "file:/data/t/a%20b/f.parquet", "file:///data/t/a%20b/f.parquet"],
)
def test_paths_are_compared_canonically(spelling):
    assert PathCanonicalizer(ROOT)(spelling) == "a b/f.parquet"
    r = LogReplay(ROOT)
    r.apply([add("a%20b/f.parquet")])
    r.apply([RemoveFile(spelling, 1)])
    assert r.files == {}


def test_a_path_outside_the_table_keeps_its_absolute_form():
    assert PathCanonicalizer(ROOT)("/elsewhere/f.parquet") == "/elsewhere/f.parquet"
    assert PathCanonicalizer(ROOT)("/data/t2/f.parquet") == "/data/t2/f.parquet"


def test_txn_is_tracked_per_app_id_last_wins():
    r = LogReplay(ROOT)
    r.apply([Txn("a", 1), Txn("b", 5)])
    r.apply([Txn("a", 2)])
    assert {k: t.version for k, t in r.txns.items()} == {"a": 2, "b": 5}


def test_domain_metadata_last_wins_and_removed_deletes():
    r = LogReplay(ROOT)
    r.apply([DomainMetadata("x", "1"), DomainMetadata("y", "1")])
    r.apply([DomainMetadata("x", "2"), DomainMetadata("y", "", removed=True)])
    assert {k: d.configuration for k, d in r.domains.items()} == {"x": "2"}


# --- checkpoints ----------------------------------------------------------------


def test_a_torn_checkpoint_is_reported_as_corrupt(tmp_path):
    from airflow_delta_provider.delta.log.checkpoint_reader import apply_checkpoint
    from airflow_delta_provider.delta.log.store import LogStore, resolve_table

    (tmp_path / "_delta_log").mkdir()
    torn = tmp_path / "_delta_log" / "00000000000000000001.checkpoint.parquet"
    pq.write_table(pa.table({"txn": pa.array([{"appId": "a", "version": 1}])}), torn)
    torn.write_bytes(torn.read_bytes()[: torn.stat().st_size // 2])
    store = LogStore(resolve_table(tmp_path))
    with pytest.raises(CorruptCheckpointError, match=r"00000000000000000001\.checkpoint\.parquet"):
        apply_checkpoint(store, store.list_from(0), LogReplay(str(tmp_path)))


def test_add_table_agrees_with_the_add_objects_over_a_checkpoint_and_commits(tmp_path, new_table, data_file):
    """The columnar view (checkpoint rows and commit adds) holds what each :class:`AddFile` says."""
    import dataclasses

    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.table import DeltaTable

    root = tmp_path / "t"
    root.mkdir()
    first = [data_file(root, pa.table({"id": list(range(n + 1))}), {"p": str(n % 2)}) for n in range(4)]
    new_table(
        root, pa.schema([("id", pa.int64()), ("p", pa.string())]), ["p"], {"delta.enableDeletionVectors": "true"}, first
    )
    table = DeltaTable(root)
    write_checkpoint(table, table.snapshot())
    txn = table.transaction("DELETE", snapshot=table.snapshot())
    txn.add_all([first[3].remove(0), dataclasses.replace(first[3], deletion_vector=inline_vector(BitMap64([0, 2])))])
    txn.add(data_file(root, pa.table({"id": [9]}), {"p": None}))
    txn.commit()
    snapshot = DeltaTable(root).snapshot()
    got = snapshot.add_table(["p"]).to_pylist()
    expected = [
        {
            "path": f.path,
            "size": f.size,
            "modificationTime": f.modification_time,
            "numRecords": f.num_records,
            "dvCardinality": f.num_deleted_records,
            "clusteringProvider": f.clustering_provider,
            "p": f.partition_values.get("p"),
        }
        for f in snapshot.files
    ]
    assert sorted(got, key=lambda r: r["path"]) == sorted(expected, key=lambda r: r["path"])
    assert sum(r["dvCardinality"] for r in got) == 2 and len(got) == 5
