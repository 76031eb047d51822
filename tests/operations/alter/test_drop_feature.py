"""ALTER TABLE ... DROP FEATURE for writer-only features: the protocol no
longer lists the feature, delta-rs and DuckDB read the table, and refusals
write nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.features import listed_features, without_feature
from airflow_delta_provider.operations.alter.drop_feature import DropFeature
from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json

SCHEMA = pa.schema([("id", pa.int64())])


def _table(root: Path, new_table: Any, data_file: Any, configuration: dict[str, str]) -> DeltaTable:
    root.mkdir(parents=True, exist_ok=True)
    add = data_file(root, pa.table({"id": [1, 2, 3]}))
    new_table(root, SCHEMA, (), configuration, [add])
    return DeltaTable(root)


def _log(root: Path) -> list[str]:
    return sorted(os.listdir(root / "_delta_log"))


def _readable_by_others(root: Path, duckdb_delta: Any) -> None:
    import deltalake

    assert sorted(deltalake.DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(r[0] for r in duckdb_delta.execute(f"SELECT id FROM delta_scan('{root}')").fetchall()) == [1, 2, 3]


def test_drop_in_commit_timestamps(tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any) -> None:
    table = _table(tmp_path / "t", new_table, data_file, {"delta.enableInCommitTimestamps": "true"})
    assert "inCommitTimestamp" in listed_features(table.snapshot().protocol)[1]
    result = alter_table(table, change_from_json({"drop_feature": {"name": "inCommitTimestamp"}}))
    assert result is not None and result.version == 2  # the preparation commit, then the downgrade
    snap = table.snapshot()
    assert "inCommitTimestamp" not in listed_features(snap.protocol)[1]
    assert snap.protocol == Protocol(1, 2)  # normalized back to the legacy protocol
    assert snap.configuration.get("delta.enableInCommitTimestamps") == "false"
    assert not any(k.startswith("delta.inCommitTimestampEnablement") for k in snap.configuration)
    assert [h["operation"] for h in table.history()][:2] == ["DROP FEATURE", "UNSET TBLPROPERTIES"]
    _readable_by_others(tmp_path / "t", duckdb_delta)


def test_drop_check_constraints_after_the_constraints(
    tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any
) -> None:
    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.constraints.positive": "id > 0"})
    assert "checkConstraints" in listed_features(table.snapshot().protocol)[1]
    before = _log(root)
    with pytest.raises(InvalidInputError, match=r"CHECK constraint.*positive.*drop them first"):
        alter_table(table, DropFeature("checkConstraints"))
    assert _log(root) == before  # nothing written
    alter_table(table, change_from_json({"drop_constraint": {"name": "positive"}}))
    alter_table(table, DropFeature("checkConstraints"))
    snap = table.snapshot()
    assert "checkConstraints" not in listed_features(snap.protocol)[1]
    _readable_by_others(root, duckdb_delta)


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("appendOnly", InvalidInputError, r"appendOnly cannot be dropped.*non-removable"),
        ("changeDataFeed", InvalidInputError, "does not list it"),
    ],
)
def test_refusals_write_nothing(
    tmp_path: Path, new_table: Any, data_file: Any, name: str, error: type[Exception], message: str
) -> None:
    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableDeletionVectors": "true"})
    before = _log(root)
    with pytest.raises(error, match=message):
        alter_table(table, DropFeature(name))
    assert _log(root) == before


def test_truncate_history_is_refused_for_a_writer_feature(tmp_path: Path, new_table: Any, data_file: Any) -> None:
    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableInCommitTimestamps": "true"})
    before = _log(root)
    with pytest.raises(InvalidInputError, match="truncate_history applies only"):
        alter_table(table, change_from_json({"drop_feature": {"name": "inCommitTimestamp", "truncate_history": True}}))
    assert _log(root) == before


@pytest.mark.parametrize(
    ("protocol", "feature", "expected"),
    [
        (Protocol(1, 3), "checkConstraints", Protocol(1, 2)),
        (Protocol(1, 7, None, ("appendOnly", "invariants", "inCommitTimestamp")), "inCommitTimestamp", Protocol(1, 2)),
        (
            Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "inCommitTimestamp")),
            "inCommitTimestamp",
            Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
        ),
        (Protocol(1, 7, None, ("inCommitTimestamp",)), "inCommitTimestamp", Protocol(1, 1)),
        (
            Protocol(2, 5),
            "checkConstraints",
            Protocol(
                3,
                7,
                ("columnMapping",),
                ("appendOnly", "changeDataFeed", "columnMapping", "generatedColumns", "invariants"),
            ),
        ),
    ],
)
def test_without_feature_normalizes_like_delta_spark(protocol: Protocol, feature: str, expected: Protocol) -> None:
    """delta-spark's ``removeFeature``: denormalize, remove, normalize."""
    assert without_feature(protocol, feature) == expected


def test_drop_v2_checkpoint_behind_checkpoint_protection(
    tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any
) -> None:
    """delta-spark's fast drop: classic policy, three checkpointed empty
    commits, then the downgrade that adds checkpointProtection at its own
    version, and a checkpoint of it."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.checkpointPolicy": "v2"})
    write_checkpoint(table, table.snapshot())  # a V2 checkpoint in the history
    assert any(f.kind == "v2checkpoint" for f in table.log_store.list_from(0))
    result = alter_table(table, DropFeature("v2Checkpoint"))
    assert result is not None and result.version == 5  # policy, 3 barrier commits, the downgrade
    snap = table.snapshot()
    readers, writers = listed_features(snap.protocol)
    assert "v2Checkpoint" not in readers | writers and "checkpointProtection" in writers
    assert snap.configuration["delta.requireCheckpointProtectionBeforeVersion"] == "5"
    assert snap.configuration["delta.checkpointPolicy"] == "classic"
    kinds = {(f.version, f.kind) for f in table.log_store.list_from(0)}
    assert {(2, "checkpoint"), (3, "checkpoint"), (4, "checkpoint"), (5, "checkpoint")} <= kinds
    assert [f.kind for f in snap.segment.checkpoint_files] == ["checkpoint"]
    assert [h["operation"] for h in table.history()][:5] == [
        "DROP FEATURE",
        "Empty Commit",
        "Empty Commit",
        "Empty Commit",
        "SET TBLPROPERTIES",
    ]
    _readable_by_others(root, duckdb_delta)


def _age_log(root: Path, days: float) -> None:
    """Make every log file ``days`` old (the retention wait, without waiting)."""
    import time

    old = time.time() - days * 86_400
    for name in os.listdir(root / "_delta_log"):
        path = root / "_delta_log" / name
        if path.is_file():
            os.utime(path, (old, old))


def test_drop_v2_checkpoint_truncating_history(
    tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any
) -> None:
    """delta-spark's drop with TRUNCATE HISTORY: the first run removes the
    traces and asks to wait; a run before the wait is refused; after it the
    history that used the feature is gone and the protocol is downgraded."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint

    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.checkpointPolicy": "v2"})
    write_checkpoint(table, table.snapshot())
    truncating = change_from_json({"drop_feature": {"name": "v2Checkpoint", "truncate_history": True}})
    with pytest.raises(InvalidInputError, match=r"partly done.*Wait 24 hours.*truncate_history"):
        alter_table(table, truncating)
    assert "v2Checkpoint" in listed_features(table.snapshot().protocol)[1]  # not dropped yet
    with pytest.raises(
        InvalidInputError, match=r"version 0 of the history still uses it. Wait until it is 24 hours old"
    ):
        alter_table(table, truncating)  # without the wait
    assert "v2Checkpoint" in listed_features(table.snapshot().protocol)[1]
    _age_log(root, 2)
    result = alter_table(table, truncating)
    assert result is not None
    snap = table.snapshot()
    readers, writers = listed_features(snap.protocol)
    assert "v2Checkpoint" not in readers | writers and "checkpointProtection" not in writers
    assert snap.protocol == Protocol(1, 2)
    remaining = table.log_store.list_from(0)
    assert min(f.version for f in remaining if f.kind == "commit") > 1  # the history that used it is gone
    assert not any(f.kind == "v2checkpoint" for f in remaining)
    assert table.history()[0]["operationParameters"]["truncateHistory"] in (True, "true")
    _readable_by_others(root, duckdb_delta)


def test_drop_row_tracking(tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any) -> None:
    """delta-spark's RowTrackingPreDowngradeCommand: off and suspended, the
    files re-added without row ids, then the downgrade drops the feature,
    its properties and its high-water mark domain."""
    from airflow_delta_provider.delta.checksum.validate import mismatches
    from airflow_delta_provider.delta.checksum.version_checksum import read_checksum

    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableRowTracking": "true"})
    assert all(f.base_row_id is not None for f in table.snapshot().files)
    assert "delta.rowTracking" in table.snapshot().domain_metadata
    result = alter_table(table, DropFeature("rowTracking"))
    assert result is not None
    snap = table.snapshot()
    assert "rowTracking" not in listed_features(snap.protocol)[1]
    assert not any(k.startswith("delta.rowTracking") or k == "delta.enableRowTracking" for k in snap.configuration)
    assert "delta.rowTracking" not in snap.domain_metadata
    assert all(f.base_row_id is None and f.default_row_commit_version is None for f in snap.files)
    assert [h["operation"] for h in table.history()][:3] == [
        "DROP FEATURE",
        "ROW TRACKING UNBACKFILL",
        "SET TBLPROPERTIES",
    ]
    for version in range(1, snap.version + 1):  # each step's checksum agrees with a replay
        recorded = read_checksum(table.log_store, version)
        assert recorded is not None and mismatches(recorded, table.snapshot(version).checksum()) == []
    _readable_by_others(root, duckdb_delta)


def _all_feature_names() -> list[str]:
    """Every feature name features.py defines."""
    from airflow_delta_provider.delta.table_features import features

    names = {v for k, v in vars(features).items() if k.isupper() and isinstance(v, str)}
    for k, v in vars(features).items():
        if k.endswith("_FEATURES") and isinstance(v, frozenset) and k.startswith(("VARIANT", "TYPE_WIDENING")):
            names |= v
    return sorted(names)


#: delta-spark's RemovableFeature names (TableFeature.scala) among ours.
DELTA_SPARK_REMOVABLE = {
    "checkConstraints", "columnMapping", "deletionVectors", "rowTracking", "domainMetadata", "v2Checkpoint",
    "typeWidening", "typeWidening-preview", "inCommitTimestamp", "vacuumProtocolCheck", "checkpointProtection",
}  # fmt: skip
DROPPED_HERE = {
    "checkConstraints", "deletionVectors", "rowTracking", "v2Checkpoint", "typeWidening", "typeWidening-preview",
    "inCommitTimestamp", "vacuumProtocolCheck",
}  # fmt: skip


@pytest.mark.parametrize("name", _all_feature_names())
def test_every_feature_is_dropped_or_refused_by_name(name: str) -> None:
    """Each feature of features.py: dropped here, or refused naming it, as
    not implemented (delta-spark can drop it) or as non-removable."""
    from airflow_delta_provider.operations.alter.drop_feature import check_removable

    if name in DROPPED_HERE:
        check_removable(name)
    elif name in DELTA_SPARK_REMOVABLE:
        with pytest.raises(UnsupportedFeatureError, match=f"dropping {name} is not implemented yet"):
            check_removable(name)
    else:
        with pytest.raises(InvalidInputError, match=f"{name} cannot be dropped: delta-spark marks it non-removable"):
            check_removable(name)


def test_drop_deletion_vectors_when_none_is_live_needs_no_engine(
    tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any
) -> None:
    """No file has a vector: the property goes, the barrier, then the
    downgrade behind checkpointProtection, with no rewrite."""
    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableDeletionVectors": "true"})
    result = alter_table(table, DropFeature("deletionVectors"))
    assert result is not None and result.version == 5  # unset, 3 barrier commits, the downgrade
    snap = table.snapshot()
    readers, writers = listed_features(snap.protocol)
    assert "deletionVectors" not in readers | writers and "checkpointProtection" in writers
    assert "delta.enableDeletionVectors" not in snap.configuration
    assert [h["operation"] for h in table.history()][:5] == [
        "DROP FEATURE", "Empty Commit", "Empty Commit", "Empty Commit", "UNSET TBLPROPERTIES",
    ]  # fmt: skip
    _readable_by_others(root, duckdb_delta)


def test_drop_type_widening_without_type_changes_needs_no_engine(
    tmp_path: Path, new_table: Any, data_file: Any, duckdb_delta: Any
) -> None:
    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableTypeWidening": "true"})
    assert "typeWidening" in listed_features(table.snapshot().protocol)[1]
    alter_table(table, DropFeature("typeWidening"))
    readers, writers = listed_features(table.snapshot().protocol)
    assert "typeWidening" not in readers | writers
    _readable_by_others(root, duckdb_delta)


def test_a_concurrent_commit_adding_a_deletion_vector_makes_the_downgrade_conflict(
    tmp_path: Path, new_table: Any, data_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invariant holds at the version the downgrade reads; a writer that read
    the table before the barrier commits a file with a vector just before the
    downgrade commits. The downgrade must conflict, not leave the vector under a
    protocol without deletionVectors."""
    import dataclasses

    from pyroaring import BitMap64

    from airflow_delta_provider.delta.actions.deletion_vectors import inline_vector
    from airflow_delta_provider.delta.errors import ConcurrentModificationError
    from airflow_delta_provider.operations.alter import drop_feature as module

    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableDeletionVectors": "true"})
    real_barrier = module._barrier

    def barrier_then_a_concurrent_delete(t: DeltaTable, snapshot: Any) -> Any:
        read = real_barrier(t, snapshot)
        live = read.files[0]
        txn = t.transaction("DELETE", {"predicate": '["id = 1"]'}, read)
        txn.read_files([live])
        txn.add_all([live.remove(1), dataclasses.replace(live, deletion_vector=inline_vector(BitMap64([0])))])
        txn.commit(metrics={})
        return read  # the downgrade goes on from the version before that commit

    monkeypatch.setattr(module, "_barrier", barrier_then_a_concurrent_delete)
    with pytest.raises(ConcurrentModificationError):
        alter_table(table, DropFeature("deletionVectors"))
    snap = table.snapshot()
    assert "deletionVectors" in listed_features(snap.protocol)[0]  # not dropped
    assert any(f.deletion_vector is not None for f in snap.files)


def _u_vector(prefix: str, file_id: Any) -> Any:
    from airflow_delta_provider.delta.actions.deletion_vectors import z85_encode
    from airflow_delta_provider.delta.actions.model import DeletionVector

    return DeletionVector("u", prefix + z85_encode(file_id.bytes), 40, 1, offset=1)


def test_deletion_vector_tombstone_paths_are_relative_and_encoded_as_restore_spells_them(tmp_path: Path) -> None:
    import uuid

    from airflow_delta_provider.delta.actions.model import DeletionVector
    from airflow_delta_provider.operations.alter.drop_feature import _dv_tombstone_path

    root = str(tmp_path / "t")
    file_id = uuid.UUID(int=7)
    name = f"deletion_vector_{file_id}.bin"
    assert _dv_tombstone_path(root, _u_vector("x:y", file_id)) == f"x:y/{name}"  # encode_path keeps ':'
    assert _dv_tombstone_path(root, _u_vector("", file_id)) == name
    inside = DeletionVector("p", f"file://{root}/a%20b/{name}", 40, 1, offset=1)
    assert _dv_tombstone_path(root, inside) == f"a%20b/{name}"  # relativized, as delta-spark does
    outside = DeletionVector("p", f"file://{tmp_path}/other/{name}", 40, 1, offset=1)
    assert _dv_tombstone_path(root, outside) == outside.path_or_inline_dv
    assert (
        _dv_tombstone_path(root, DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 1))
        is None
    )


def test_truncate_history_does_not_wait_for_a_commit_of_tombstones_only(
    tmp_path: Path, new_table: Any, data_file: Any
) -> None:
    """No vector is live and the property is off: the preparation only adds
    vector tombstones, which delta-spark does not count as a change
    (``performedChanges = tracesFound``), so the drop goes straight to the
    history check instead of asking for the 24-hour wait."""
    import dataclasses
    import time
    import uuid

    root = tmp_path / "t"
    table = _table(root, new_table, data_file, {"delta.enableDeletionVectors": "true"})
    live = table.snapshot().files[0]
    with_dv = dataclasses.replace(live, deletion_vector=_u_vector("", uuid.uuid4()))
    txn = table.transaction("DELETE", {}, table.snapshot())
    txn.add_all([live.remove(1), with_dv])
    txn.commit(metrics={})
    rewritten = data_file(root, pa.table({"id": [1, 2, 3]}))
    txn = table.transaction("REORG", {}, table.snapshot())
    txn.add_all([with_dv.remove(int(time.time() * 1000)), rewritten])
    txn.commit(metrics={})
    alter_table(table, change_from_json({"unset_properties": ["delta.enableDeletionVectors"]}))
    before = table.snapshot().version

    truncating = change_from_json({"drop_feature": {"name": "deletionVectors", "truncate_history": True}})
    with pytest.raises(InvalidInputError, match=r"of the history still uses it. Wait until it is 24 hours old"):
        alter_table(table, truncating)
    operations = [h["operation"] for h in table.history()][: table.snapshot().version - before]
    assert operations == ["Empty Commit", "Deletion Vector Tombstones"]
