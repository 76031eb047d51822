"""Unit tests for ``delta/transaction.py``: create, commit, conflicts, gates, checkpoints.

Races are simulated the way delta-spark's own tests do: two transactions are
built from one snapshot, one commits, then the other tries. Data files are
never read here, so ``add`` actions name files that need not exist.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from airflow_delta_provider import __version__
from airflow_delta_provider.delta.actions.model import TOKEN_TAG, AddFile, Metadata, Protocol, parse_commit
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    CommitFailedError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    InvalidInputError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.scan.skipping import Predicate
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
_n = iter(range(10**9))


def now_ms() -> int:
    return int(time.time() * 1000)


def fadd(p: str | None = None, partitioned: bool = True) -> AddFile:
    name = f"part-{next(_n):05d}-{uuid.uuid4()}.c000.snappy.parquet"
    if not partitioned:
        return AddFile(name, {}, 10, now_ms(), stats='{"numRecords":1}')
    return AddFile(f"p={p}/{name}", {"p": p}, 10, now_ms(), stats='{"numRecords":1}')


def create(root: Path, partition_columns=("p",), configuration=None, adds=(), token=None):
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {"partitionBy": list(partition_columns), "mode": "ErrorIfExists"}, None)
    txn.update_metadata(Metadata.new(SCHEMA, partition_columns, configuration or {}, created_time=now_ms()))
    txn.add_all(list(adds))
    return table, txn.commit(metrics={"numFiles": len(adds), "numOutputRows": 3}, token=token)


def commit_lines(table: DeltaTable, version: int) -> list[dict]:
    return [json.loads(line) for line in table.log_store.read_commit(version).splitlines()]


def log_names(table: DeltaTable) -> list[str]:
    return sorted(os.listdir(os.path.join(table.root, "_delta_log")))


def append(table: DeltaTable, *adds: AddFile, snapshot=None):
    txn = table.transaction("WRITE", {"mode": "Append"}, snapshot or table.snapshot())
    txn.add_all(adds)
    return txn.commit(metrics={"numFiles": len(adds)})


# --- create and commitInfo ------------------------------------------------------


def test_create_writes_commit_info_protocol_1_2_and_metadata(tmp_path):
    before = now_ms()
    table, result = create(tmp_path, adds=[fadd("a")], token="dag.task.run.0")
    assert result.version == 0
    lines = commit_lines(table, 0)
    assert [next(iter(line)) for line in lines] == ["commitInfo", "protocol", "metaData", "add"]
    assert lines[1]["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    md = lines[2]["metaData"]
    assert uuid.UUID(md["id"]).version == 4
    assert md["format"] == {"provider": "parquet", "options": {}}
    assert md["partitionColumns"] == ["p"] and json.loads(md["schemaString"]) == json.loads(SCHEMA)
    assert md["configuration"] == {} and before <= md["createdTime"] <= now_ms()


def test_commit_info_is_in_delta_spark_style(tmp_path):
    before = now_ms()
    table, result = create(tmp_path, adds=[fadd("a")], token="tok-1")
    info = commit_lines(table, 0)[0]["commitInfo"]
    assert info == result.commit_info
    assert before <= info["timestamp"] <= now_ms()
    assert info["operation"] == "CREATE TABLE"
    # Lists and dicts are JSON-encoded strings; strings stay raw.
    assert info["operationParameters"] == {"partitionBy": '["p"]', "mode": "ErrorIfExists"}
    assert "readVersion" not in info
    assert info["isolationLevel"] == "Serializable"
    assert isinstance(info["isBlindAppend"], bool)
    assert info["operationMetrics"] == {"numFiles": "1", "numOutputRows": "3"}
    assert info["engineInfo"] == f"airflow-delta-provider/{__version__}"
    assert uuid.UUID(info["txnId"])
    assert info["tags"] == {TOKEN_TAG: "tok-1"}

    result = append(table, fadd("b"))
    info = commit_lines(table, 1)[0]["commitInfo"]
    assert result.version == 1 and info["readVersion"] == 0
    assert info["isBlindAppend"] is True and "tags" not in info
    assert info["txnId"] != commit_lines(table, 0)[0]["commitInfo"]["txnId"]
    assert DeltaTable(tmp_path).find_commit("tok-1")[0] == 0


def test_non_blind_commit_info(tmp_path):
    table, _ = create(tmp_path, adds=[f := fadd("a")])
    txn = table.transaction("DELETE", {"predicate": ["p = 'a'"]}, table.snapshot())
    txn.read_predicate(Predicate.parse("p = 'a'"))
    txn.add(f.remove(now_ms()))
    txn.commit(metrics={"numDeletedRows": 1})
    info = commit_lines(table, 1)[0]["commitInfo"]
    assert info["isBlindAppend"] is False
    assert info["operationParameters"] == {"predicate": "[\"p = 'a'\"]"}


def test_create_needs_metadata(tmp_path):
    txn = DeltaTable(tmp_path).transaction("CREATE TABLE", {}, None)
    with pytest.raises(InvalidInputError, match="metadata"):
        txn.commit()
    assert not (tmp_path / "_delta_log" / f"{0:020d}.json").exists()


def test_two_concurrent_creates_second_gets_protocol_changed(tmp_path):
    table = DeltaTable(tmp_path)
    txns = []
    for _ in range(2):
        txn = table.transaction("CREATE TABLE", {}, None)
        txn.update_metadata(Metadata.new(SCHEMA, ["p"], {}, created_time=now_ms()))
        txn.add(fadd("a"))
        txns.append(txn)
    assert txns[0].commit().version == 0
    with pytest.raises(ProtocolChangedError):
        txns[1].commit()
    assert log_names(table) == [f"{0:020d}.crc", f"{0:020d}.json"]  # the winner's commit and checksum


def test_staged_actions_are_validated(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    dup = fadd("a")
    txn = table.transaction("WRITE", {}, snap)
    txn.add_all([dup, dup])
    with pytest.raises(InvalidInputError, match="twice"):
        txn.commit()
    txn = table.transaction("WRITE", {}, snap)
    txn.add(AddFile("x.parquet", {}, 1, 1))
    with pytest.raises(InvalidInputError, match="partition"):
        txn.commit()
    with pytest.raises(InvalidInputError):
        table.transaction("WRITE", {}, snap).add(Protocol(1, 2))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        table.transaction("WRITE", {}, snap, isolation_level="Chaos")
    assert table.latest_version() == 0


def test_empty_commit_is_allowed(tmp_path):
    table, _ = create(tmp_path)
    txn = table.transaction(
        "VACUUM START", {"retentionCheckEnabled": True}, table.snapshot(), isolation_level="SnapshotIsolation"
    )
    result = txn.commit(metrics={"numFilesToDelete": 0})
    info = commit_lines(table, 1)[0]["commitInfo"]
    assert result.version == 1 and len(commit_lines(table, 1)) == 1
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is True
    assert info["operationParameters"] == {"retentionCheckEnabled": True}


# --- retries and conflicts ------------------------------------------------------


def test_blind_appends_from_one_snapshot_both_commit(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    a, b = table.transaction("WRITE", {}, snap), table.transaction("WRITE", {}, snap)
    a.add(fa := fadd("x"))
    b.add(fb := fadd("x"))
    assert a.commit().version == 1
    result = b.commit()
    assert (result.version, result.attempts) == (2, 2)
    assert commit_lines(table, 2)[0]["commitInfo"]["readVersion"] == 0
    assert {f.path for f in table.snapshot().files} == {fa.path, fb.path}


def test_retry_skips_over_several_winners(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    for _ in range(3):
        append(table, fadd("x"))
    txn = table.transaction("WRITE", {}, snap)
    txn.add(fadd("y"))
    assert txn.commit().version == 4
    assert len(table.snapshot().files) == 4


def test_commit_attempts_are_bounded(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    append(table, fadd("x"))
    txn = table.transaction("WRITE", {}, snap)
    txn.add(fadd("y"))
    with pytest.raises(CommitFailedError, match="1 commit attempts"):
        txn.commit(max_attempts=1)
    assert table.latest_version() == 1


def test_recommitting_the_same_transaction_finds_its_own_commit(tmp_path):
    # A winner carrying our txnId is our own earlier attempt (delta-spark).
    table, _ = create(tmp_path)
    txn = table.transaction("WRITE", {}, table.snapshot())
    txn.add(fadd("x"))
    first = txn.commit()
    again = txn.commit()
    assert first.version == again.version == 1
    assert table.latest_version() == 1


def _rewrite(table, snap, removes=(), predicate=None, reads=()):
    txn = table.transaction("UPDATE", {"predicate": [predicate or "true"]}, snap)
    if predicate is not None:
        txn.read_predicate(Predicate.parse(predicate))
    txn.read_files(reads)
    txn.add_all([*(f.remove(now_ms()) for f in removes), fadd("a")])
    return txn


def test_add_into_a_read_partition_is_a_concurrent_append(tmp_path):
    table, _ = create(tmp_path, adds=[fa := fadd("a")])
    snap = table.snapshot()
    loser = _rewrite(table, snap, removes=[fa], predicate="p = 'a'", reads=[fa])
    append(table, fadd("a"), snapshot=snap)
    with pytest.raises(ConcurrentAppendError, match="p=a") as err:
        loser.commit()
    assert err.value.winning_version == 1
    assert table.latest_version() == 1


def test_add_into_another_partition_does_not_conflict(tmp_path):
    table, _ = create(tmp_path, adds=[fa := fadd("a")])
    snap = table.snapshot()
    txn = _rewrite(table, snap, removes=[fa], predicate="p = 'a'", reads=[fa])
    append(table, fb := fadd("b"), snapshot=snap)
    assert txn.commit().version == 2
    live = {f.path for f in table.snapshot().files}
    assert fa.path not in live and fb.path in live and len(live) == 2


def test_removal_of_a_read_file_is_a_concurrent_delete_read(tmp_path):
    table, _ = create(tmp_path, adds=[fa := fadd("a"), fb := fadd("b")])
    snap = table.snapshot()
    reader = table.transaction("WRITE", {}, snap)
    reader.read_files([fa])
    reader.add(fadd("c"))
    deleter = table.transaction("DELETE", {}, snap)
    deleter.add(fa.remove(now_ms()))
    deleter.commit()
    with pytest.raises(ConcurrentDeleteReadError):
        reader.commit()
    assert {f.path for f in table.snapshot().files} == {fb.path}


def test_two_rewrites_of_one_file_is_a_concurrent_delete_delete_and_leaves_no_trace(tmp_path):
    table, _ = create(tmp_path, adds=[fa := fadd("a")])
    snap = table.snapshot()
    first = _rewrite(table, snap, removes=[fa], reads=[fa])
    second = _rewrite(table, snap, removes=[fa], reads=[fa])
    first.commit()
    before = log_names(table)
    with pytest.raises(ConcurrentDeleteDeleteError):
        second.commit()
    assert log_names(table) == before
    assert table.latest_version() == 1


def test_concurrent_metadata_change_is_metadata_changed(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    loser = _rewrite(table, snap, predicate="p = 'a'")
    changer = table.transaction("SET TBLPROPERTIES", {}, snap)
    changer.update_metadata(Metadata(snap.metadata.id, SCHEMA, ("p",), {"delta.appendOnly": "false"}))
    changer.commit()
    with pytest.raises(MetadataChangedError):
        loser.commit()


def test_same_txn_app_id_is_a_concurrent_transaction(tmp_path):
    table, _ = create(tmp_path)
    snap = table.snapshot()
    a, b = table.transaction("WRITE", {}, snap), table.transaction("WRITE", {}, snap)
    for txn in (a, b):
        txn.set_txn("etl-app", 5)
        txn.add(fadd("x"))
    a.commit()
    with pytest.raises(ConcurrentTransactionError, match="etl-app"):
        b.commit()
    # Different app ids do not conflict.
    snap = table.snapshot()
    c, d = table.transaction("WRITE", {}, snap), table.transaction("WRITE", {}, snap)
    c.set_txn("app-c", 1)
    d.set_txn("app-d", 1)
    c.commit()
    assert d.commit().version == 3


def test_idempotent_txn_is_visible_in_the_snapshot(tmp_path):
    table, _ = create(tmp_path)
    txn = table.transaction("WRITE", {}, table.snapshot())
    txn.set_txn("etl-app", 7)
    txn.add(fadd("x"))
    result = txn.commit()
    assert table.snapshot().txn_version("etl-app") == 7
    (line,) = [line for line in commit_lines(table, result.version) if "txn" in line]
    assert line["txn"]["appId"] == "etl-app" and line["txn"]["version"] == 7
    assert isinstance(line["txn"]["lastUpdated"], int)
    with pytest.raises(InvalidInputError):
        table.transaction("WRITE", {}, table.snapshot()).set_txn("", 1)


def test_an_empty_marker_commit_does_not_conflict_with_a_metadata_change(tmp_path):
    """VACUUM END must land after files were deleted, whatever committed meanwhile."""
    table, _ = create(tmp_path)
    snap = table.snapshot()
    marker = table.transaction("VACUUM END", {"status": "COMPLETED"}, snap, isolation_level="SnapshotIsolation")
    changer = table.transaction("SET TBLPROPERTIES", {}, snap)
    changer.update_metadata(Metadata(snap.metadata.id, SCHEMA, ("p",), {"delta.appendOnly": "false"}))
    changer.commit()
    assert marker.commit().version == 2


# --- gates ------------------------------------------------------------------------


def _table_with_protocol(
    root: Path, protocol: dict, configuration: dict | None = None, field_metadata: dict | None = None
) -> DeltaTable:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = json.loads(SCHEMA)
    schema["fields"][0]["metadata"] = field_metadata or {}
    md = {
        "id": "x",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": ["p"],
        "configuration": configuration or {},
    }
    (log / f"{0:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": md}) + "\n")
    return DeltaTable(root)


#: How a table uses each writer feature we do not implement: (configuration, field metadata).
USES = {
    "checkConstraints": ({"delta.constraints.positive": "id > 0"}, None),
    "changeDataFeed": ({"delta.enableChangeDataFeed": "true"}, None),
    "generatedColumns": (None, {"delta.generationExpression": "id + 1"}),
    "identityColumns": (None, {"delta.identity.start": 1, "delta.identity.step": 1}),
}


def test_a_writer_3_table_with_a_check_constraint_takes_commits(tmp_path):
    """checkConstraints is implemented: the engine's write jobs enforce it."""
    configuration, _ = USES["checkConstraints"]
    table = _table_with_protocol(tmp_path, {"minReaderVersion": 1, "minWriterVersion": 3}, configuration)
    assert append(table, fadd("a")).version == 1


@pytest.mark.parametrize("writer", [3, 4, 5, 6])
def test_legacy_writer_versions_are_writable_while_their_features_are_unused(tmp_path, writer):
    """As delta-rs: a legacy writer version only asks for what the table uses."""
    table = _table_with_protocol(tmp_path, {"minReaderVersion": 1, "minWriterVersion": writer})
    assert append(table, fadd("a")).version == 1


@pytest.mark.parametrize(("writer", "feature"), [(4, "generatedColumns"), (6, "identityColumns")])
def test_tables_using_generated_or_identity_columns_take_commits(tmp_path, writer, feature):
    """Issue 11: generatedColumns and identityColumns are implemented (the engine computes and checks them)."""
    configuration, field_metadata = USES[feature]
    table = _table_with_protocol(
        tmp_path, {"minReaderVersion": 1, "minWriterVersion": writer}, configuration, field_metadata
    )
    assert append(table, fadd("a")).version == 1


@pytest.mark.parametrize("feature", ["generatedColumns", "identityColumns"])
def test_writer_7_tables_using_generated_or_identity_columns_take_commits(tmp_path, feature):
    configuration, field_metadata = USES[feature]
    table = _table_with_protocol(
        tmp_path,
        {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", feature]},
        configuration,
        field_metadata,
    )
    assert append(table, fadd("a")).version == 1


@pytest.mark.parametrize("feature", ["someFutureFeature"])
def test_writer_gate_refuses_listed_writer_7_features_whose_use_the_metadata_does_not_show(tmp_path, feature):
    table = _table_with_protocol(
        tmp_path, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", feature]}
    )
    with pytest.raises(UnsupportedFeatureError, match=feature):
        table.transaction("WRITE", {}, table.snapshot())
    assert table.latest_version() == 0


def test_writer_7_listing_an_unused_change_data_feed_is_writable(tmp_path):
    """delta-spark's upgrade from writer 4 lists changeDataFeed whether or not it is on."""
    table = _table_with_protocol(
        tmp_path, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "changeDataFeed"]}
    )
    assert append(table, fadd("a")).version == 1


def test_writer_7_with_append_only_and_invariants_is_writable(tmp_path):
    table = _table_with_protocol(
        tmp_path, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "invariants"]}
    )
    assert append(table, fadd("a")).version == 1


def test_upgrading_the_protocol_to_an_unsupported_feature_is_refused(tmp_path):
    table, _ = create(tmp_path)
    txn = table.transaction("UPGRADE", {}, table.snapshot())
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV1"):
        txn.update_protocol(Protocol(1, 7, None, ("icebergCompatV1",)))


def test_append_only_refuses_data_changing_removes(tmp_path):
    table, _ = create(tmp_path, configuration={"delta.appendOnly": "true"}, adds=[fa := fadd("a")])
    txn = table.transaction("DELETE", {}, table.snapshot())
    txn.add(fa.remove(now_ms()))
    with pytest.raises(AppendOnlyViolationError, match="append-only"):
        txn.commit()
    assert table.latest_version() == 0
    # Appends and dataChange=false rearranging are fine.
    assert append(table, fadd("a")).version == 1
    txn = table.transaction("OPTIMIZE", {}, table.snapshot())
    txn.add_all([fa.remove(now_ms(), data_change=False), fadd("a")])
    assert txn.commit().version == 2


# --- post-commit checkpoints ------------------------------------------------------


def _checkpoints(table: DeltaTable) -> list[int]:
    return [f.version for f in table.log_store.list_from(0) if f.kind == "checkpoint"]


def test_checkpoint_every_10_versions_by_default(tmp_path):
    table, _ = create(tmp_path)
    for _ in range(9):
        append(table, fadd("a"))
    assert _checkpoints(table) == []
    append(table, fadd("a"))
    assert _checkpoints(table) == [10]
    assert table.log_store.read_last_checkpoint()["version"] == 10
    for _ in range(2):
        append(table, fadd("a"))
    snap = table.snapshot()
    assert snap.segment.checkpoint_version == 10 and snap.num_files == 12


def test_checkpoint_interval_is_a_table_property(tmp_path):
    table, _ = create(tmp_path, configuration={"delta.checkpointInterval": "3"})
    for _ in range(7):
        append(table, fadd("a"))
    assert _checkpoints(table) == [3, 6]
    assert table.log_store.read_last_checkpoint()["version"] == 6
    assert table.snapshot().num_files == 7


def test_post_commit_checkpoint_failure_does_not_fail_the_commit(tmp_path, monkeypatch):
    from airflow_delta_provider.delta.checkpoint import writer as checkpoint

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint, "write_checkpoint", broken)
    table, _ = create(tmp_path, configuration={"delta.checkpointInterval": "1"})
    assert append(table, fadd("a")).version == 1
    assert _checkpoints(table) == [] and table.snapshot().num_files == 1


def test_any_checkpoint_exception_leaves_the_commit_standing(tmp_path, monkeypatch):
    """The commit is durable once N.json exists: callers must not undo it."""
    from airflow_delta_provider.delta.checkpoint import writer as checkpoint

    def broken(*args, **kwargs):
        raise TypeError("unexpected")

    monkeypatch.setattr(checkpoint, "write_checkpoint", broken)
    table, _ = create(tmp_path, configuration={"delta.checkpointInterval": "1"})
    assert append(table, fadd("a")).version == 1
    assert _checkpoints(table) == [] and table.snapshot().num_files == 1


def test_commit_lines_parse_back(tmp_path):
    table, _ = create(tmp_path, adds=[fadd("a")])
    actions = list(parse_commit(table.log_store.read_commit(0)))
    assert [type(a).__name__ for a in actions] == ["CommitInfo", "Protocol", "Metadata", "AddFile"]
