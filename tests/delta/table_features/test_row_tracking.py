"""Row tracking in the core (``delta/row_tracking.py`` and the transaction):
fresh row ids and default row commit versions for new files, the
``delta.rowTracking`` high-water mark, re-adds that keep theirs, reassignment
after a concurrent commit, enabling on a new and on an existing table."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace
from itertools import pairwise

import pytest

from airflow_delta_provider.delta.actions.model import AddFile, DomainMetadata, Metadata
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import ConcurrentAppendError, InvalidInputError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import row_tracking

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
ON = {"delta.enableRowTracking": "true"}


def now_ms() -> int:
    return int(time.time() * 1000)


def fadd(rows: int | None = 3) -> AddFile:
    stats = json.dumps({"numRecords": rows}) if rows is not None else None
    return AddFile(f"part-00000-{uuid.uuid4()}.c000.snappy.parquet", {}, 10, now_ms(), stats=stats)


def create(root, configuration=None, adds=()) -> DeltaTable:
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {"mode": "ErrorIfExists"}, None)
    txn.update_metadata(Metadata.new(SCHEMA, (), dict(configuration or {}), created_time=now_ms()))
    txn.add_all(list(adds))
    txn.commit()
    return table


def append(table: DeltaTable, *adds: AddFile, snapshot=None) -> int:
    txn = table.transaction("WRITE", {"mode": "Append"}, snapshot or table.snapshot())
    txn.add_all(adds)
    return txn.commit().version


def ranges(snapshot) -> list[tuple[int, int, int]]:
    """(baseRowId, rows, defaultRowCommitVersion) of every live file, by baseRowId."""
    return sorted((f.base_row_id, f.num_records, f.default_row_commit_version) for f in snapshot.files)


def commit_actions(table: DeltaTable, version: int) -> list[dict]:
    return [json.loads(line) for line in table.log_store.read_commit(version).splitlines()]


def test_a_table_created_with_row_tracking_gets_the_feature_columns_and_ids(tmp_path):
    table = create(tmp_path, ON, [fadd(3), fadd(2)])
    snap = table.snapshot()
    assert snap.protocol.min_writer_version == 7
    assert {"rowTracking", "domainMetadata"} <= set(snap.protocol.writer_features)
    id_col, version_col = row_tracking.materialized_columns(snap.metadata)
    assert id_col.startswith("_row-id-col-") and version_col.startswith("_row-commit-version-col-")
    assert ranges(snap) == [(0, 3, 0), (3, 2, 0)]
    assert row_tracking.high_water_mark(snap.domain_metadata) == 4
    assert row_tracking.enabled(snap.protocol, snap.metadata)


def test_appends_take_consecutive_ranges_above_the_mark_and_their_version(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    assert append(table, fadd(5), fadd(1)) == 1
    snap = table.snapshot()
    assert ranges(snap) == [(0, 3, 0), (3, 5, 1), (8, 1, 1)]
    assert row_tracking.high_water_mark(snap.domain_metadata) == 8
    lines = commit_actions(table, 1)
    assert {
        "domainMetadata": {"domain": "delta.rowTracking", "configuration": '{"rowIdHighWaterMark":8}', "removed": False}
    } in lines
    info = next(a["commitInfo"] for a in lines if "commitInfo" in a)
    assert info["isBlindAppend"] is True  # the mark does not make an append less blind
    assert info["tags"] == {"delta.rowTracking.preserved": "true"}


def test_the_preserved_tag_says_what_the_writer_says_and_needs_row_tracking_enabled(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    txn.add(fadd(1))
    txn.row_tracking_preserved = False
    version = txn.commit(token="tok").version
    info = next(a["commitInfo"] for a in commit_actions(table, version) if "commitInfo" in a)
    assert info["tags"]["delta.rowTracking.preserved"] == "false" and len(info["tags"]) == 2  # the token kept
    plain = create(tmp_path / "plain", {}, [fadd(3)])
    version = append(plain, fadd(1))
    info = next(a["commitInfo"] for a in commit_actions(plain, version) if "commitInfo" in a)
    assert "tags" not in info


def test_the_mark_and_the_ids_survive_a_checkpoint(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    append(table, fadd(2))
    write_checkpoint(table, table.snapshot())
    append(table, fadd(4))
    snap = DeltaTable(str(tmp_path)).snapshot()
    assert ranges(snap) == [(0, 3, 0), (3, 2, 1), (5, 4, 2)]
    assert row_tracking.high_water_mark(snap.domain_metadata) == 8


def test_a_re_added_file_keeps_its_ids_and_version_and_a_remove_carries_them(tmp_path):
    table = create(tmp_path, ON, [fadd(3), fadd(2)])
    snap = table.snapshot()
    first, second = sorted(snap.files, key=lambda f: f.base_row_id)
    txn = table.transaction("OPTIMIZE", {}, snap, isolation_level="SnapshotIsolation")
    txn.add(replace(first, data_change=False))  # re-added (as a vector or a restore would)
    txn.add(second.remove(now_ms(), data_change=False))
    txn.add(fadd(2))  # the rewrite of `second`
    version = txn.commit().version
    lines = commit_actions(table, version)
    readd = next(a["add"] for a in lines if "add" in a and a["add"]["path"] == first.path)
    assert (readd["baseRowId"], readd["defaultRowCommitVersion"]) == (0, 0)
    removed = next(a["remove"] for a in lines if "remove" in a)
    assert (removed["baseRowId"], removed["defaultRowCommitVersion"]) == (3, 0)
    assert ranges(table.snapshot()) == [(0, 3, 0), (5, 2, 1)]


def test_a_commit_adding_no_file_leaves_the_mark_alone(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    snap = table.snapshot()
    txn = table.transaction("DELETE", {}, snap)
    txn.read_whole_table()
    txn.add(snap.files[0].remove(now_ms()))
    version = txn.commit().version
    assert not any("domainMetadata" in a for a in commit_actions(table, version))
    assert row_tracking.high_water_mark(table.snapshot().domain_metadata) == 2


def test_a_new_file_without_num_records_is_refused_and_nothing_is_committed(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    with pytest.raises(InvalidInputError, match="numRecords"):
        append(table, fadd(None))
    assert table.latest_version() == 0


def test_a_concurrent_append_moves_our_ids_above_its_mark_and_our_version_on(tmp_path):
    """delta-spark's ConflictChecker.reassignRowIdsAndCommitVersions, with a real winner."""
    table = create(tmp_path, ON, [fadd(3)])
    snap = table.snapshot()
    ours = table.transaction("WRITE", {"mode": "Append"}, snap)
    ours.add(fadd(4))
    assert append(table, fadd(10), snapshot=snap) == 1  # the winner: ids 3..12 at version 1
    result = ours.commit()
    assert (result.version, result.attempts) == (2, 2)
    snap = table.snapshot()
    assert ranges(snap) == [(0, 3, 0), (3, 10, 1), (13, 4, 2)]
    assert row_tracking.high_water_mark(snap.domain_metadata) == 16
    ids = [i for base, rows, _ in ranges(snap) for i in range(base, base + rows)]
    assert len(ids) == len(set(ids)) == 17


def test_a_winner_that_adds_the_feature_makes_our_retry_assign_ids(tmp_path):
    """A winner that only lists ``rowTracking`` (delta-spark's ``delta.feature.rowTracking=supported``)
    leaves its protocol in force: our retried append gives its file ids."""
    from airflow_delta_provider.delta.actions.model import Protocol

    table = create(tmp_path, {}, [fadd(3)])
    snap = table.snapshot()
    ours = table.transaction("WRITE", {"mode": "Append"}, snap)
    ours.add(fadd(4))
    upgrade = table.transaction("UPGRADE PROTOCOL", {}, snap)
    upgrade.update_protocol(Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants", "rowTracking")))
    upgrade.commit()
    assert ours.commit().version == 2
    snap = table.snapshot()
    assert [(f.base_row_id, f.default_row_commit_version) for f in snap.files if f.num_records == 4] == [(0, 2)]
    assert row_tracking.high_water_mark(snap.domain_metadata) == 3


def test_a_concurrent_enablement_aborts_us_as_any_metadata_change_does(tmp_path):
    from airflow_delta_provider.delta.errors import MetadataChangedError

    table = create(tmp_path, {}, [fadd(3)])
    snap = table.snapshot()
    ours = table.transaction("WRITE", {"mode": "Append"}, snap)
    ours.add(fadd(4))
    enable = table.transaction("SET TBLPROPERTIES", {}, snap)
    enable.update_metadata(replace(snap.metadata, configuration=ON))
    enable.commit()
    with pytest.raises(MetadataChangedError):
        ours.commit()


def test_enabling_on_an_existing_table_backfills_its_files(tmp_path):
    table = create(tmp_path, {}, [fadd(3), fadd(2)])
    append(table, fadd(1))
    snap = table.snapshot()
    assert all(f.base_row_id is None for f in snap.files)
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(replace(snap.metadata, configuration=ON))
    version = txn.commit().version
    lines = commit_actions(table, version)
    readds = [a["add"] for a in lines if "add" in a]
    assert len(readds) == 3 and not any(a["dataChange"] for a in readds)
    snap = table.snapshot()
    bases = [(base, rows) for base, rows, _ in ranges(snap)]
    assert bases[0][0] == 0 and all(b + n == nb for (b, n), (nb, _) in pairwise(bases))
    assert row_tracking.high_water_mark(snap.domain_metadata) == 5
    assert all(r[2] == version for r in ranges(snap))
    assert row_tracking.enabled(snap.protocol, snap.metadata)
    from deltalake import DeltaTable as RsTable

    rs = RsTable(str(tmp_path))
    assert rs.version() == version and len(rs.file_uris()) == 3


def test_set_tblproperties_turns_it_on_with_a_backfill_and_cannot_name_the_columns(tmp_path):
    from airflow_delta_provider.delta.errors import UnsupportedFeatureError
    from airflow_delta_provider.operations.alter.plan import SetProperties, UnsetProperties, alter_table

    table = create(tmp_path, {}, [fadd(3), fadd(2)])
    with pytest.raises(UnsupportedFeatureError):
        alter_table(table, SetProperties({"delta.rowTracking.materializedRowIdColumnName": "x"}))
    assert table.latest_version() == 0
    version = alter_table(table, SetProperties(ON)).version
    snap = table.snapshot()
    assert sorted(f.num_records for f in snap.files) == [2, 3]
    assert sorted(r[0] for r in ranges(snap)) in ([0, 2], [0, 3])
    assert {r[2] for r in ranges(snap)} == {version}
    names = row_tracking.materialized_columns(snap.metadata)
    alter_table(table, UnsetProperties(("delta.enableRowTracking",)))
    assert row_tracking.materialized_columns(table.snapshot().metadata) == names


def test_a_backfill_conflicts_with_a_concurrent_delete_of_a_file(tmp_path):
    table = create(tmp_path, {}, [fadd(3), fadd(2)])
    snap = table.snapshot()
    enable = table.transaction("SET TBLPROPERTIES", {}, snap)
    enable.update_metadata(replace(snap.metadata, configuration=ON))
    delete = table.transaction("DELETE", {}, snap)
    delete.read_whole_table()
    delete.add(snap.files[0].remove(now_ms()))
    delete.commit()
    from airflow_delta_provider.delta.errors import ConcurrentModificationError

    with pytest.raises(ConcurrentModificationError):
        enable.commit()
    assert table.latest_version() == 1


def test_a_backfill_needs_num_records(tmp_path):
    table = create(tmp_path, {}, [fadd(None)])
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(replace(snap.metadata, configuration=ON))
    with pytest.raises(InvalidInputError, match="numRecords"):
        txn.commit()
    assert table.latest_version() == 0


def test_the_materialized_names_stay_when_later_metadata_drops_them(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    snap = table.snapshot()
    names = row_tracking.materialized_columns(snap.metadata)
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.enableRowTracking": "false"}))
    txn.commit()
    snap = table.snapshot()
    assert row_tracking.materialized_columns(snap.metadata) == names
    assert not row_tracking.enabled(snap.protocol, snap.metadata)
    append(table, fadd(2))  # still supported: new files still get ids
    assert ranges(table.snapshot())[-1] == (3, 2, 2)


def test_a_materialized_name_may_not_be_a_column(tmp_path):
    configuration = {
        **ON,
        "delta.rowTracking.materializedRowIdColumnName": "id",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "v",
    }
    with pytest.raises(InvalidInputError, match="clash"):
        create(tmp_path, configuration)
    assert not (tmp_path / "_delta_log").exists() or not list((tmp_path / "_delta_log").glob("*.json"))


def test_suspended_row_tracking_assigns_nothing(tmp_path):
    table = create(tmp_path, ON, [fadd(3)])
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", {}, snap)
    txn.update_metadata(
        replace(snap.metadata, configuration={**snap.metadata.configuration, "delta.rowTrackingSuspended": "true"})
    )
    txn.commit()
    version = append(table, fadd(2))
    added = next(a["add"] for a in commit_actions(table, version) if "add" in a)
    assert "baseRowId" not in added


def test_a_concurrent_winner_in_another_partition_of_a_dml_still_conflicts_as_before(tmp_path):
    """Row tracking adds no conflict and removes none: a read of the whole table loses to an append."""
    table = create(tmp_path, ON, [fadd(3)])
    snap = table.snapshot()
    txn = table.transaction("DELETE", {}, snap)
    txn.read_whole_table()
    txn.add(snap.files[0].remove(now_ms()))
    append(table, fadd(1), snapshot=snap)
    with pytest.raises(ConcurrentAppendError):
        txn.commit()


def test_high_water_mark_reads_a_commit_and_a_snapshot():
    mark = row_tracking.domain_action(41)
    assert row_tracking.high_water_mark([mark]) == 41
    assert row_tracking.high_water_mark({"delta.rowTracking": mark}) == 41
    assert row_tracking.high_water_mark([DomainMetadata("other", "{}")]) == -1
