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
