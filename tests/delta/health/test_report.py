"""The health report against independent readings: delta-rs's add actions and the log itself."""

from __future__ import annotations

import json

import deltalake
import pyarrow as pa
import pytest

from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.health.report import SIZE_BINS, health_report
from airflow_delta_provider.delta.log.last_vacuum_info import write_last_vacuum_info
from airflow_delta_provider.delta.table import DeltaTable
from tests.delta.health.conftest import HIDDEN_ROWS


def _delta_rs_partitions(root) -> dict[str | None, dict[str, int]]:
    """Files, bytes and rows per ``day`` from delta-rs's flattened add actions (which
    carry no deletion vectors: their hidden rows come from the log's ``add`` objects)."""
    adds = pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True)).to_pydict()
    out: dict[str | None, dict[str, int]] = {}
    for day, size, rows in zip(adds["partition.day"], adds["size_bytes"], adds["num_records"]):
        p = out.setdefault(day, {"files": 0, "bytes": 0, "rows": 0, "hidden": 0})
        p["files"] += 1
        p["bytes"] += size
        p["rows"] += rows
    for f in DeltaTable(root).snapshot().files:
        out[f.partition_values["day"]]["hidden"] += f.num_deleted_records
    return out


def test_files_bytes_rows_and_hidden_rows_per_partition_match_delta_rs(health_table):
    root, _written = health_table
    report = health_report(DeltaTable(root))
    expected = _delta_rs_partitions(root)
    got = {
        p.values["day"]: {
            "files": p.num_files,
            "bytes": p.size_in_bytes,
            "rows": p.num_records,
            "hidden": p.num_deleted_records,
        }
        for p in report.partitions
    }
    assert got == expected
    assert [p.values["day"] for p in report.partitions] == ["a", "b", None]
    assert report.num_deleted_records == HIDDEN_ROWS
    assert report.deleted_row_share == pytest.approx(HIDDEN_ROWS / (60 + 20 + 2))


def test_small_files_against_the_target_size(health_table):
    root, _written = health_table
    table = DeltaTable(root)
    assert health_report(table).small_file_share == 1.0  # kilobytes, against half of 128 MiB
    sizes = sorted(f.size for f in table.snapshot().files)
    cut = sizes[len(sizes) // 2]
    report = health_report(table, small_file_size=cut)
    assert report.num_small_files == sum(1 for s in sizes if s < cut)
    assert report.small_file_share == pytest.approx(report.num_small_files / len(sizes))
    assert sum(report.size_histogram) == len(sizes) and len(report.size_histogram) == len(SIZE_BINS)


def test_checkpoint_history_tombstones_and_vacuum(health_table):
    root, written = health_table
    table = DeltaTable(root)
    now = json.loads(table.log_store.read("00000000000000000004.json").split(b"\n")[0])["commitInfo"]["timestamp"]
    report = health_report(table, now_ms=now + 60_000)
    assert (report.version, report.checkpoint_version, report.commits_since_checkpoint) == (4, 2, 2)
    assert report.last_optimize is not None and report.last_optimize.version == 1
    assert report.last_vacuum is not None and report.last_vacuum.version == 3
    doc = report.to_dict()
    assert doc["lastVacuum"]["ageSeconds"] == pytest.approx((now + 60_000 - report.last_vacuum.timestamp) / 1000)
    # Only the tombstone removed 8 days ago is past the 7-day retention.
    assert report.vacuumable_bytes == written["vacuumable"]
    assert report.tombstoned_bytes == written["tombstoned"] and report.num_tombstones == 4
    assert report.vacuum_lite_available
    assert [v["operation"] for v in doc["history"]] == ["DELETE", "VACUUM END", "DELETE", "OPTIMIZE", "CREATE TABLE"]
    assert doc["clusteringCoverage"] is None
    json.dumps(doc)  # JSON-serialisable


def test_lite_is_unavailable_once_cleanup_removed_commits_no_vacuum_recorded(health_table):
    root, _written = health_table
    (root / "_delta_log" / "00000000000000000000.json").unlink()
    (root / "_delta_log" / "00000000000000000001.json").unlink()
    report = health_report(DeltaTable(root))
    assert not report.vacuum_lite_available
    assert report.last_optimize is None  # its commit is gone


def test_clustering_coverage_is_the_share_of_files_clustering_wrote(health_table):
    """Unclustered until ALTER ... CLUSTER BY; then one of the files rewritten with ``clusteringProvider``."""
    root, written = health_table
    table = DeltaTable(root)
    assert health_report(table).clustering_coverage is None
    table2 = _unpartitioned_clustered(root.parent / "c", written)
    report = health_report(table2)
    assert report.clustering_columns == ["id"]
    assert report.clustering_coverage == pytest.approx(1 / 3)
    assert report.to_dict()["clusteringCoverage"] == pytest.approx(1 / 3)


def _unpartitioned_clustered(root, written):
    """Three files, then CLUSTER BY id, then one file re-added as clustering writes it."""
    import dataclasses

    import pyarrow as pa

    from airflow_delta_provider.delta.actions.model import RemoveFile
    from airflow_delta_provider.operations.alter.plan import alter_table, change_from_json
    from tests.delta.conftest import create_table, write_data_file

    root.mkdir()
    files = [write_data_file(root, pa.table({"id": [i, i + 1]})) for i in range(0, 6, 2)]
    create_table(root, pa.schema([("id", pa.int64())]), (), {}, files)
    table = DeltaTable(root)
    alter_table(table, change_from_json({"cluster_by": ["id"]}))
    txn = table.transaction("OPTIMIZE", snapshot=table.snapshot())
    old = files[0]
    txn.add_all(
        [
            RemoveFile(path=old.path, deletion_timestamp=0, size=old.size, data_change=False),
            dataclasses.replace(old, clustering_provider="liquid", data_change=False),
        ]
    )
    txn.commit()
    return table


def test_an_expired_remove_stays_vacuumable_after_a_checkpoint_drops_its_tombstone(health_table, data_file):
    """The confirmed scenario: the checkpoint writer keeps only unexpired tombstones, so the
    8-day-old remove leaves the snapshot after one more commit and a checkpoint; its file is
    still on disk, and the report still counts it (from the commit's ``remove`` action)."""
    root, written = health_table
    table = DeltaTable(root)
    assert health_report(table).vacuumable_bytes == written["vacuumable"]
    txn = table.transaction("WRITE", snapshot=table.snapshot())
    txn.add(data_file(root, pa.table({"id": [900]}), {"day": "c"}))
    txn.commit()
    write_checkpoint(table, table.snapshot())
    snapshot = DeltaTable(root).snapshot()
    assert written["b"][1].path not in {r.path for r in snapshot.all_tombstones}  # the checkpoint dropped it
    report = health_report(DeltaTable(root))
    assert report.vacuumable_bytes == written["vacuumable"]
    assert report.num_pending_removes == 2 and report.to_dict()["numPendingRemoves"] == 2


def test_removes_a_recorded_lite_vacuum_covered_or_a_re_added_file_are_not_counted(health_table):
    root, written = health_table
    table = DeltaTable(root)
    write_last_vacuum_info(table.log_store, 4)  # a LITE vacuum read every commit up to 4
    report = health_report(table)
    assert (report.vacuumable_bytes, report.num_pending_removes) == (
        written["vacuumable"],
        2,
    )  # the snapshot still holds them
    write_last_vacuum_info(table.log_store, 2)
    txn = table.transaction("WRITE", snapshot=table.snapshot())
    txn.add(written["b"][1])  # the removed file comes back
    txn.commit()
    report = health_report(DeltaTable(root))
    assert report.vacuumable_bytes == 0
