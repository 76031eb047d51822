"""Symlink format manifests in the core, locally and on S3 (moto): GENERATE
lists exactly the live files of each partition (checked against delta-rs's
``file_uris`` with its partition filters), commits on a table with the
property keep them current (a partition left with no file loses its
manifest), a failed update leaves the commit standing and the next commit
repairs the manifests, and the property is refused beside deletion vectors
or column mapping with nothing committed."""

from __future__ import annotations

import dataclasses
import json
import logging
import time

import pyarrow as pa
import pytest

from airflow_delta_provider.delta import symlink_manifest
from airflow_delta_provider.delta.errors import SymlinkManifestUnsupportedError
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_properties import SYMLINK_FORMAT_MANIFEST
from airflow_delta_provider.delta.transaction.transaction import Transaction
from airflow_delta_provider.operations.alter.plan import SetProperties, alter_table
from airflow_delta_provider.operations.vacuum.plan import list_table, plan_vacuum
from tests.symlink_manifests import INLINE_DV, as_delta_rs, delta_rs_manifests, manifests, remove_partition
from tests.symlink_manifests import current as current_manifests

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
ENABLED = {SYMLINK_FORMAT_MANIFEST: "true"}
#: Partition values that exercise Hive escaping, URI encoding and the null partition.
VALUES = ["a b", "x:y", None, "%41", "a b"]


@pytest.fixture(params=["local", "s3"])
def backend(request, tmp_path, monkeypatch):
    """A local folder, then a moto bucket (its credentials in the environment)."""
    if request.param == "local":
        from tests.storage_servers import Backend

        return Backend("local", str(tmp_path))
    bucket = request.getfixturevalue("s3_bucket")
    for key, value in bucket.env.items():
        monkeypatch.setenv(key, value)
    return bucket


def append(table: DeltaTable, adds, operation="WRITE"):
    txn = table.transaction(operation, parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add_all(adds)
    return txn.commit(metrics={})


def rows(data_file, uri, values):
    return [data_file(uri, pa.table({"id": [i]}), {"p": v}) for i, v in enumerate(values)]


def test_generate_lists_the_live_files_of_each_partition_as_delta_rs_does(backend, new_table, data_file) -> None:
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], adds=rows(data_file, uri, VALUES))
    table = DeltaTable(uri)
    remove_partition(table, "%41")  # not a manifest of a partition with no file

    result = symlink_manifest.generate(table, table.snapshot())

    got = manifests(uri)
    assert sorted(got) == sorted(["p=a b", "p=x%3Ay", "p=__HIVE_DEFAULT_PARTITION__"])
    assert {folder: as_delta_rs(lines) for folder, lines in got.items()} == delta_rs_manifests(
        uri, backend.storage_options
    )
    assert all(line.startswith("file:/" if backend.name == "local" else "s3://") for ls in got.values() for line in ls)
    assert (result.version, result.written, result.deleted, result.full) == (1, 3, 0, True)


def test_generate_on_an_unpartitioned_table_and_an_empty_one(backend, new_table, data_file) -> None:
    uri = backend.uri("t")
    adds = [data_file(uri, pa.table({"id": [i]})) for i in range(3)]
    new_table(uri, pa.schema([("id", pa.int64())]), adds=adds)
    table = DeltaTable(uri)
    symlink_manifest.generate(table, table.snapshot())
    got = manifests(uri)
    assert list(got) == [""] and as_delta_rs(got[""]) == delta_rs_manifests(uri, backend.storage_options)[""]

    empty = backend.uri("empty")
    new_table(empty, pa.schema([("id", pa.int64())]))
    symlink_manifest.generate(DeltaTable(empty), DeltaTable(empty).snapshot())
    assert manifests(empty) == {"": []}  # delta-spark writes an empty manifest


def test_commits_keep_the_manifests_current(backend, new_table, data_file) -> None:
    uri = backend.uri("t")
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a", "b"]))
    table = DeltaTable(uri)
    assert sorted(manifests(uri)) == ["p=a", "p=b"]  # the first commit generates them all

    append(table, rows(data_file, uri, ["b", "c"]))
    remove_partition(table, "a")

    got = manifests(uri)
    assert sorted(got) == ["p=b", "p=c"]  # "a" lost its last file, and its manifest
    assert len(got["p=b"]) == 2
    assert {f: as_delta_rs(lines) for f, lines in got.items()} == delta_rs_manifests(uri, backend.storage_options)
    state = json.loads(open_storage(uri).get(symlink_manifest.STATE_FILE))
    assert state == {"version": 2, "tableId": table.snapshot().metadata.id}
    listing = list_table(open_storage(uri), ["p"])
    snapshot = table.snapshot()
    plan = plan_vacuum(table_root=uri, listing=listing, adds=snapshot.files, tombstones=[], partition_columns=["p"],
                       now_ms=int(time.time() * 1000) + 10**9, retention_ms=0)  # fmt: skip
    assert not [f for f in plan.files if symlink_manifest.MANIFEST_DIR in f.path]  # VACUUM keeps the manifests


def test_an_incremental_update_rewrites_only_the_touched_partitions(tmp_path, new_table, data_file) -> None:
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a", "b"]))
    table = DeltaTable(uri)
    untouched = tmp_path / symlink_manifest.MANIFEST_DIR / "p=b" / "manifest"
    before = untouched.stat().st_mtime_ns
    time.sleep(0.01)
    append(table, rows(data_file, uri, ["a"]))
    assert untouched.stat().st_mtime_ns == before
    assert len(manifests(uri)["p=a"]) == 2


def test_a_failed_update_leaves_the_commit_and_the_next_commit_repairs_it(
    tmp_path, new_table, data_file, monkeypatch, caplog
) -> None:
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a"]))
    table = DeltaTable(uri)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(symlink_manifest, "_write_manifest", broken)
        with caplog.at_level(logging.WARNING):
            result = append(table, rows(data_file, uri, ["b"]))
    assert result.version == 1 and table.latest_version() == 1  # the write stands
    assert "symlink manifests were not updated" in caplog.text and "disk full" in caplog.text
    assert sorted(manifests(uri)) == ["p=a"]  # stale

    append(table, rows(data_file, uri, ["c"]))  # touches only "c", and repairs "b" too
    assert sorted(manifests(uri)) == ["p=a", "p=b", "p=c"]
    assert {f: as_delta_rs(lines) for f, lines in manifests(uri).items()} == delta_rs_manifests(uri, {})


def test_a_commit_by_another_engine_makes_the_next_update_a_full_one(tmp_path, new_table, data_file) -> None:
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a"]))
    table = DeltaTable(uri)
    # Another engine's commit that updates no manifest (the core's bare transaction), and a stray manifest.
    txn = Transaction(table, "WRITE", {}, table.snapshot())
    txn.add_all(rows(data_file, uri, ["b"]))
    txn.commit(metrics={})
    open_storage(uri).put(f"{symlink_manifest.MANIFEST_DIR}/p=gone/manifest", b"file:/nowhere\n")

    append(table, rows(data_file, uri, ["c"]))
    assert sorted(manifests(uri)) == ["p=a", "p=b", "p=c"]


def test_the_property_is_refused_beside_deletion_vectors_or_column_mapping(tmp_path, new_table, data_file) -> None:
    uri = str(tmp_path / "t")
    with pytest.raises(SymlinkManifestUnsupportedError, match="enableDeletionVectors"):
        new_table(uri, SCHEMA, ["p"], {**ENABLED, "delta.enableDeletionVectors": "true"})
    with pytest.raises(SymlinkManifestUnsupportedError, match=r"columnMapping\.mode=name"):
        new_table(uri, SCHEMA, ["p"], {**ENABLED, "delta.columnMapping.mode": "name"})
    assert not DeltaTable(uri).exists()

    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a"]))
    table = DeltaTable(uri)
    for change in ({"delta.enableDeletionVectors": "true"}, {"delta.columnMapping.mode": "name"}):
        with pytest.raises(SymlinkManifestUnsupportedError):
            alter_table(table, SetProperties(change))
    assert table.latest_version() == 0


def test_turning_manifests_on_is_refused_while_files_carry_deletion_vectors(tmp_path, new_table, data_file) -> None:
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], {"delta.enableDeletionVectors": "true"})
    table = DeltaTable(uri)
    add = rows(data_file, uri, ["a"])[0]
    append(table, [dataclasses.replace(add, deletion_vector=INLINE_DV)])
    alter_table(table, SetProperties({"delta.enableDeletionVectors": "false"}))

    with pytest.raises(SymlinkManifestUnsupportedError, match="has a deletion vector"):
        alter_table(table, SetProperties(ENABLED))
    with pytest.raises(SymlinkManifestUnsupportedError, match="has a deletion vector"):
        symlink_manifest.generate(table, table.snapshot())
    assert table.latest_version() == 2
    assert manifests(uri) == {}


@pytest.mark.parametrize(
    ("root", "path", "line"),
    [
        ("/data/t", "p=a%20b/part-0.parquet", "file:/data/t/p=a b/part-0.parquet"),
        ("/data/t", "p=x%253Ay/part-0.parquet", "file:/data/t/p=x%3Ay/part-0.parquet"),
        ("s3://lake/t", "p=a%20b/part-0.parquet", "s3://lake/t/p=a b/part-0.parquet"),
        # A shallow clone's files: absolute URIs, listed where they are (decoded).
        ("s3://lake/clone", "s3://lake/source/p=a%20b/part-0.parquet", "s3://lake/source/p=a b/part-0.parquet"),
        ("/data/clone", "file:///data/source/part-0.parquet", "file:/data/source/part-0.parquet"),
        ("/data/clone", "file:/data/source/part-0.parquet", "file:/data/source/part-0.parquet"),
    ],
)
def test_a_manifest_line_is_the_files_absolute_decoded_location(root, path, line) -> None:
    assert symlink_manifest.manifest_line(root, path) == line


@pytest.mark.parametrize("loaded", [True, False], ids=["from-the-read-snapshot", "from-the-new-snapshot"])
def test_the_incremental_update_finds_the_same_files_either_way(
    tmp_path, new_table, data_file, loaded, monkeypatch
) -> None:
    uri = str(tmp_path)
    derived = []
    files_after = symlink_manifest._files_after
    monkeypatch.setattr(symlink_manifest, "_files_after", lambda *a: derived.append(1) or files_after(*a))
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a", "a", "b", "c"]))
    table = DeltaTable(uri)
    snapshot = table.snapshot()
    if loaded:
        assert snapshot.files and snapshot.files_loaded
    first_a = next(f for f in snapshot.files if f.partition_values["p"] == "a") if loaded else None
    txn = table.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snapshot)
    if first_a is None:
        first_a = next(f for f in table.snapshot().files if f.partition_values["p"] == "a")
    txn.add_all([first_a.remove(int(time.time() * 1000)), *rows(data_file, uri, ["a", "d"])])
    txn.commit(metrics={})
    assert snapshot.files_loaded is loaded
    assert bool(derived) is loaded  # no log replay when the read snapshot has the files

    assert sorted(manifests(uri)) == ["p=a", "p=b", "p=c", "p=d"]
    assert current_manifests(uri) == delta_rs_manifests(uri)
    assert json.loads(open_storage(uri).get(symlink_manifest.STATE_FILE))["version"] == 1


def test_a_commit_that_changes_the_partition_columns_regenerates_every_manifest(tmp_path, new_table, data_file) -> None:
    from airflow_delta_provider.delta.actions.model import Metadata
    from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
    from airflow_delta_provider.delta.schema.types import schema_string

    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a", "b"]))
    table = DeltaTable(uri)
    snapshot = table.snapshot()
    txn = table.transaction("WRITE", parameters={"mode": "Overwrite"}, snapshot=snapshot)
    schema = schema_string(from_arrow_schema(SCHEMA, metadata=False))
    txn.update_metadata(dataclasses.replace(Metadata.new(schema, [], ENABLED, created_time=1), id=snapshot.metadata.id))
    now = int(time.time() * 1000)
    txn.add_all([*(f.remove(now) for f in snapshot.files), data_file(uri, pa.table({"id": [9], "p": ["z"]}))])
    txn.commit(metrics={})

    assert list(manifests(uri)) == [""]  # the partitions' manifests went with their layout
    assert current_manifests(uri) == delta_rs_manifests(uri)


def _bare_commit(table: DeltaTable, actions, operation="WRITE"):
    """A commit that runs no post-commit hook (so the test decides when each hook runs)."""
    txn = Transaction(table, operation, {}, table.snapshot())
    txn.add_all(actions)
    return txn.commit(metrics={})


def test_a_slower_hook_of_an_older_version_ends_at_the_newest_version(tmp_path, new_table, data_file, monkeypatch):
    """The interleaving: version 1's hook reads the record (0), version 2 removes a file of
    p=a and its faster full regeneration finishes, then version 1's hook writes p=a from
    version 1's files. It must not leave the removed file listed, nor record version 1."""
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a", "b"]))
    table = DeltaTable(uri)
    v0 = table.snapshot()
    first = next(f for f in v0.files if f.partition_values["p"] == "a")  # loads its files, as a writer's
    added = rows(data_file, uri, ["a"])
    v1_actions = list(added)
    _bare_commit(table, v1_actions)
    _bare_commit(table, [first.remove(int(time.time() * 1000))], "DELETE")
    full = symlink_manifest.update_after_commit(table, 2, None, v0.metadata, table.snapshot)  # v2's hook: full
    assert full is not None and full.full and full.version == 2

    stale = symlink_manifest._read_state(table)
    real_read = symlink_manifest._read_state
    reads = iter([(0, v0.metadata.id)])  # version 1's hook read the record before version 2's hook wrote it
    monkeypatch.setattr(symlink_manifest, "_read_state", lambda t: next(reads, None) or real_read(t))
    result = symlink_manifest.update_after_commit(table, 1, v1_actions, v0.metadata, table.snapshot, read_snapshot=v0)
    monkeypatch.setattr(symlink_manifest, "_read_state", real_read)

    assert stale == (2, v0.metadata.id)
    assert result is not None and result.full and result.version == 2  # regenerated from the newest version
    assert symlink_manifest._read_state(table) == (2, v0.metadata.id)
    assert {f: as_delta_rs(lines) for f, lines in manifests(uri).items()} == delta_rs_manifests(uri, {})
    assert not any(first.path in line for line in manifests(uri)["p=a"])


def test_a_commit_without_file_actions_advances_the_record(tmp_path, new_table, data_file, monkeypatch) -> None:
    uri = str(tmp_path)
    new_table(uri, SCHEMA, ["p"], ENABLED, adds=rows(data_file, uri, ["a"]))
    table = DeltaTable(uri)
    alter_table(table, SetProperties({"comment.owner": "x"}))  # no add, no remove
    assert symlink_manifest._read_state(table) == (1, table.snapshot().metadata.id)

    def no_full(*args, **kwargs):
        raise AssertionError("a full regeneration")

    monkeypatch.setattr(symlink_manifest, "generate", no_full)
    append(table, rows(data_file, uri, ["b"]))  # incremental: the record says 1
    assert symlink_manifest._read_state(table) == (2, table.snapshot().metadata.id)
    assert sorted(manifests(uri)) == ["p=a", "p=b"]
