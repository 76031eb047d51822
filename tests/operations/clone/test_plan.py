"""SHALLOW CLONE in the core, on every backend: the clone reads the source's
rows at the chosen version from the source's own files (named by absolute
URI), delta-rs reads it too, a RESTORE on the clone re-adds files outside its
root, and bad input is refused by name with nothing written. Across two S3
buckets the table storage's credentials reach both."""

from __future__ import annotations

import dataclasses
import json
import time

import pyarrow as pa
import pytest
from pyroaring import BitMap64

from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorFile
from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    SymlinkManifestUnsupportedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from airflow_delta_provider.delta.partitions import absolute_uri, to_absolute
from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.clone.plan import clone_table, source_name
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.restore.plan import restore_table
from tests.delta.conftest import read_snapshot
from tests.delta.test_on_every_backend import SCHEMA, append, history_with_a_delete, ids_of, rows
from tests.storage_servers import AZURITE_ACCOUNT, s3_backend


@pytest.fixture
def backend(storage_backend, monkeypatch):
    """Each backend, its credentials in the environment; Azure named with its
    account (a clone of an ``az://`` root without one is refused)."""
    for key, value in storage_backend.env.items():
        monkeypatch.setenv(key, value)
    if storage_backend.name == "azure":
        container = storage_backend.base.split("://", 1)[1].strip("/")
        return dataclasses.replace(storage_backend, base=f"abfss://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net")
    return storage_backend


def rs_ids(uri: str, storage_options: dict[str, str] | None = None, version: int | None = None) -> list[int]:
    """The ids delta-rs reads, through DataFusion (its pyarrow dataset path
    does not resolve absolute ``add`` paths; its query engine does)."""
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    table = RsTable(uri, version=version, storage_options=dict(storage_options or {}) or None)
    out = pa.table(QueryBuilder().register("t", table).execute("SELECT id FROM t").read_all())
    return sorted(out.column("id").to_pylist())


def _source(new_table, data_file, uri: str) -> DeltaTable:
    """v0 [1, 2] (p=a) / v1 +[3] (p=b) / v2 [1, 2] removed."""
    table = history_with_a_delete(new_table, data_file, uri)
    return table


def _log_files(table: DeltaTable) -> list[str]:
    return sorted(m.path for m in table.storage.list_tree("_delta_log")) if table.storage.exists("_delta_log") else []


def test_a_clone_reads_the_source_rows_at_the_chosen_version(backend, new_table, data_file, snapshot_rows):
    source = _source(new_table, data_file, backend.uri("src"))
    clone = DeltaTable(backend.uri("clone"))

    result, plan = clone_table(source, clone, version=1, token="dag/clone/run/-1")

    assert result.version == 0
    snap = clone.snapshot()
    assert ids_of(snapshot_rows(snap)) == [1, 2, 3]
    assert rs_ids(clone.uri, backend.storage_options) == [1, 2, 3]
    # Every add names a file of the source at version 1, by absolute URI.
    then = source.snapshot(version=1)
    assert sorted(to_absolute(clone.root, f.path) for f in snap.files) == sorted(then.file_path(f) for f in then.files)
    assert all(parse_location(clone.root).relative(to_absolute(clone.root, f.path)) is None for f in snap.files)
    # The source's schema, partitioning, properties and protocol; a new id.
    assert (snap.schema, snap.partition_columns, snap.protocol) == (then.schema, then.partition_columns, then.protocol)
    assert snap.metadata.id != then.metadata.id
    info = clone.history()[0]
    name = source_name(source.storage.location)
    assert info["operation"] == "CLONE"
    assert info["operationParameters"] == {"source": name, "sourceVersion": 1}
    assert name == (f"delta.`file:{source.root}`" if backend.name == "local" else name)
    assert info["operationMetrics"] == {
        "sourceTableSize": str(then.size_in_bytes),
        "sourceNumOfFiles": "2",
        "numRemovedFiles": "0",
        "numCopiedFiles": "0",
        "removedFilesSize": "0",
        "copiedFilesSize": "0",
    }
    assert plan.metrics()["sourceNumOfFiles"] == 2
    # The latest version, and a timestamp, select versions too.
    latest = DeltaTable(backend.uri("clone_latest"))
    clone_table(source, latest)
    assert ids_of(snapshot_rows(latest.snapshot())) == [3]
    by_time = DeltaTable(backend.uri("clone_by_time"))
    _, plan = clone_table(source, by_time, timestamp=source.snapshot(version=0).timestamp)
    assert plan.source.version == 0 and ids_of(snapshot_rows(by_time.snapshot())) == [1, 2]


def test_a_restore_on_the_clone_re_adds_the_source_files(backend, new_table, data_file, snapshot_rows):
    source = _source(new_table, data_file, backend.uri("src"))
    clone = DeltaTable(backend.uri("clone"))
    clone_table(source, clone, version=1)
    snap = clone.snapshot()
    txn = clone.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snap)
    txn.add_all([f.remove(int(time.time() * 1000)) for f in snap.files])
    txn.commit(metrics={})
    append(clone, rows(data_file, clone.uri, [9]))

    result, plan = restore_table(clone, version=0)

    assert result.version == 3 and len(plan.restored) == 2
    assert ids_of(snapshot_rows(clone.snapshot())) == [1, 2, 3]
    assert rs_ids(clone.uri, backend.storage_options) == [1, 2, 3]
    assert ids_of(snapshot_rows(source.snapshot())) == [3]  # the source is as it was
    # A checkpoint keeps the absolute paths: the clone replays from it to the same rows.
    write_checkpoint(clone, clone.snapshot())
    assert ids_of(snapshot_rows(DeltaTable(clone.uri).snapshot())) == [1, 2, 3]
    assert rs_ids(clone.uri, backend.storage_options) == [1, 2, 3]


def test_replace_swaps_a_table_for_the_clone_in_one_commit(backend, new_table, data_file, snapshot_rows):
    source = _source(new_table, data_file, backend.uri("src"))
    target_uri = backend.uri("target")
    new_table(target_uri, SCHEMA, ["p"], adds=[rows(data_file, target_uri, [7]), rows(data_file, target_uri, [8], "c")])
    target = DeltaTable(target_uri)
    before = target.snapshot()

    result, _ = clone_table(source, target, version=1, replace=True)

    assert result.version == 1
    assert ids_of(snapshot_rows(target.snapshot())) == [1, 2, 3]
    assert target.snapshot().metadata.id == before.metadata.id  # the replaced table's id
    metrics = target.history()[0]["operationMetrics"]
    assert (metrics["numRemovedFiles"], metrics["removedFilesSize"]) == ("2", str(before.size_in_bytes))
    assert ids_of(snapshot_rows(target.snapshot(version=0))) == [7, 8]  # time travel still works


def test_bad_input_is_refused_and_writes_nothing(backend, new_table, data_file, tmp_path):
    source = _source(new_table, data_file, backend.uri("src"))
    existing_uri = backend.uri("existing")
    new_table(existing_uri, SCHEMA, ["p"], adds=[rows(data_file, existing_uri, [7])])
    existing = DeltaTable(existing_uri)
    logs = _log_files(existing)
    with pytest.raises(TableAlreadyExistsError, match="replace"):
        clone_table(source, existing)
    assert _log_files(existing) == logs

    empty = DeltaTable(backend.uri("empty"))
    with pytest.raises(VersionNotFoundError):
        clone_table(source, empty, version=9)
    with pytest.raises(TableNotFoundError):
        clone_table(DeltaTable(backend.uri("nothing_here")), empty)
    with pytest.raises(InvalidInputError, match="into itself"):
        clone_table(source, DeltaTable(backend.uri("src")), replace=True)
    src_files = sorted(m.path for m in source.storage.list_tree(""))
    inside = DeltaTable(backend.uri("src/clone"))
    with pytest.raises(InvalidInputError, match=r"into .*src/clone: the target lies inside the source"):
        clone_table(source, inside)
    outer = DeltaTable(backend.uri(""))
    with pytest.raises(InvalidInputError, match=r"cannot clone .*src into .*: the source lies inside the target"):
        clone_table(source, outer, replace=True)
    assert sorted(m.path for m in source.storage.list_tree("")) == src_files
    with pytest.raises(InvalidInputError, match="versions start at 0"):
        CloneSpec(table_path=empty.uri, source_path=source.uri, version=-1)
    assert not empty.exists() and not empty.storage.list_tree("")

    folder = DeltaTable(backend.uri("folder"))
    folder.storage.put("data.parquet", b"not a delta table")
    with pytest.raises(InvalidInputError, match="not empty"):
        clone_table(source, folder)
    assert [m.path for m in folder.storage.list_tree("")] == ["data.parquet"]
    assert source.latest_version() == 2


def test_column_mapping_mode_may_not_change(tmp_path, new_table, data_file):
    source = _source(new_table, data_file, str(tmp_path / "src"))
    with pytest.raises(UnsupportedFeatureError, match="columnMapping"):
        clone_table(source, DeltaTable(str(tmp_path / "c")), properties={"delta.columnMapping.mode": "name"})
    assert not (tmp_path / "c").exists()


def test_deletion_vectors_become_absolute_and_still_hide_rows(tmp_path, new_table, data_file, snapshot_rows):
    src = str(tmp_path / "src")
    new_table(
        src,
        SCHEMA,
        ["p"],
        configuration={"delta.enableDeletionVectors": "true"},
        adds=[rows(data_file, src, [1, 2, 3])],
    )
    source = DeltaTable(src)
    snapshot = source.snapshot()
    vectors = DeletionVectorFile()
    (add,) = snapshot.files
    marked = add.with_deletion_vector(vectors.add(BitMap64([1])), 3)
    source.storage.put(vectors.path, vectors.data())
    txn = source.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snapshot)
    txn.add_all([add.remove(int(time.time() * 1000)), marked])
    txn.commit(metrics={})
    clone = DeltaTable(str(tmp_path / "clone"))

    clone_table(source, clone)

    (cloned,) = clone.snapshot().files
    assert cloned.deletion_vector.storage_type == "p"
    assert cloned.deletion_vector.path_or_inline_dv == absolute_uri(source.storage.location, vectors.path)
    assert ids_of(snapshot_rows(clone.snapshot())) == [1, 3]
    assert rs_ids(clone.uri) == [1, 3]
    assert json.loads(clone.storage.get("_delta_log/00000000000000000000.json").splitlines()[1])["protocol"] == (
        snapshot.protocol.to_json()
    )
    # Symlink manifests cannot express the source's vectors: refused at clone time, nothing written.
    manifest = DeltaTable(str(tmp_path / "manifest"))
    with pytest.raises(SymlinkManifestUnsupportedError, match=r"cannot clone .* has a deletion vector"):
        clone_table(
            source,
            manifest,
            properties={
                "delta.enableDeletionVectors": "false",
                "delta.compatibility.symlinkFormatManifest.enabled": "true",
            },
        )
    assert not (tmp_path / "manifest").exists()


def test_a_clone_across_two_s3_buckets(moto_server, monkeypatch, new_table, data_file, snapshot_rows):
    """The source in one bucket, the clone in another: the clone's storage
    options (not the environment) reach the source's bucket too."""
    first, second = s3_backend(moto_server), s3_backend(moto_server)
    for key, value in first.env.items():
        monkeypatch.setenv(key, value)
    source = _source(new_table, data_file, first.uri("src"))
    for key in first.env:
        monkeypatch.delenv(key)
    clone = DeltaTable(second.uri("clone"), second.storage_options)

    clone_table(DeltaTable(first.uri("src"), first.storage_options), clone, version=1)

    assert {parse_location(to_absolute(clone.root, f.path)).bucket for f in clone.snapshot().files} == {first.bucket}
    assert ids_of(snapshot_rows(clone.snapshot())) == [1, 2, 3]
    # delta-rs 1.x registers an object store for the table's own bucket only:
    # it cannot read a clone across buckets (docs/clone.rst).
    assert source.root.startswith(f"s3://{first.bucket}/")


def test_a_clone_of_timestamp_partitions_on_s3_reads_and_restores(moto_server, monkeypatch, new_table, data_file):
    """Hive escapes ':' in a partition folder (``%3A``), which the log encodes
    again (``%253A``): the clone's absolute adds are decoded once, so the
    arrow reader, the deletion vector reader and RESTORE find the real keys."""
    from airflow_delta_provider.delta.partitions import file_storage
    from airflow_delta_provider.operations.restore.plan import missing_files
    from tests.delta.conftest import read_snapshot

    s3 = s3_backend(moto_server)
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    stamp = "2024-01-01 10:00:00"
    uri = s3.uri("src")
    new_table(uri, SCHEMA, ["p"], adds=[rows(data_file, uri, [1, 2], stamp), rows(data_file, uri, [3], "a b:c")])
    source = DeltaTable(uri)
    assert any("%253A" in f.path for f in source.snapshot().files)
    clone = DeltaTable(s3.uri("clone"))
    clone_table(source, clone)

    snap = clone.snapshot()
    assert any("10%253A00%253A00" in f.path for f in snap.files)
    for f in snap.files:
        storage, name = file_storage(clone.storage, f.path)
        assert storage.exists(name) and "%3A" in name
    assert ids_of(read_snapshot(snap)) == [1, 2, 3]
    assert sorted(read_snapshot(snap).column("p").to_pylist()) == ["2024-01-01 10:00:00"] * 2 + ["a b:c"]
    assert missing_files(clone, snap.files) == []
    # Remove everything, then RESTORE: the source's files are found present and re-added.
    txn = clone.transaction("DELETE", parameters={"predicate": "[]"}, snapshot=snap)
    txn.add_all([f.remove(int(time.time() * 1000)) for f in snap.files])
    txn.commit(metrics={})
    _, plan = restore_table(clone, version=0)
    assert len(plan.restored) == 2
    assert ids_of(read_snapshot(clone.snapshot())) == [1, 2, 3]


def test_replacing_a_clone_adds_only_the_files_it_does_not_hold(tmp_path, new_table, data_file):
    """A clone replaced by a later version of its source keeps the files both
    versions share: no add for them (so no insert in the change feed, no new
    row ids), a remove for the ones the later version dropped."""
    from airflow_delta_provider.delta.log.replay import PathCanonicalizer
    from airflow_delta_provider.delta.table_changes import changes_between

    source = _source(new_table, data_file, str(tmp_path / "src"))
    clone = DeltaTable(str(tmp_path / "clone"))
    clone_table(source, clone, version=1, properties={"delta.enableChangeDataFeed": "true"})
    first = clone.snapshot()
    kept = next(f for f in first.files if f.partition_values == {"p": "b"})

    result, plan = clone_table(source, clone, replace=True, properties={"delta.enableChangeDataFeed": "true"})

    canonical = PathCanonicalizer(clone.root)
    assert plan.adds == [] and [f.partition_values for f in plan.removed] == [{"p": "a"}]
    actions = [json.loads(line) for line in clone.storage.get(f"_delta_log/{result.version:020d}.json").splitlines()]
    assert not [a for a in actions if "add" in a]
    assert [canonical(a["remove"]["path"]) for a in actions if "remove" in a] == [
        canonical(f.path) for f in first.files if f.partition_values == {"p": "a"}
    ]
    assert [canonical(f.path) for f in clone.snapshot().files] == [canonical(kept.path)]
    changes = changes_between(clone, result.version)
    assert changes.file_counts() == {"delete": 1}
    # Replaced by the older version again: the dropped file comes back, the kept one is not re-added.
    result, plan = clone_table(source, clone, version=1, replace=True)
    assert [f.partition_values for f in plan.adds] == [{"p": "a"}] and plan.removed == []


def test_adds_keep_the_scheme_the_source_was_addressed_with(moto_server, azurite, monkeypatch, new_table, data_file):
    """delta-spark qualifies a clone's paths with its source's scheme: a source
    named ``s3a://`` gives ``s3a://`` adds (OSS Hadoop has no ``s3://``), which
    our reader and delta-rs read too. An Azure source without its account is
    refused, nothing written: no other engine could read ``az://c/...``."""
    from tests.storage_servers import Backend

    s3 = s3_backend(moto_server)
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    _source(new_table, data_file, s3.uri("src"))
    source = DeltaTable(s3.uri("src").replace("s3://", "s3a://"))
    clone = DeltaTable(s3.uri("clone"))

    clone_table(source, clone, version=1)

    snap = clone.snapshot()
    assert all(f.path.startswith(f"s3a://{s3.bucket}/src/") for f in snap.files)
    assert ids_of(read_snapshot(snap)) == [1, 2, 3]
    # delta-rs 1.x registers an object store for the table's own scheme only: it
    # reads the ``s3://`` adds of a source named ``s3://`` (the tests above),
    # not ``s3a://`` ones, as with delta-spark's clones (docs/clone.rst).

    container = azurite.create_container()
    azure = Backend("azure", f"az://{container}", azurite.settings(), azurite.settings(), azurite.endpoint)
    for key, value in azure.env.items():
        monkeypatch.setenv(key, value)
    _source(new_table, data_file, azure.uri("src"))
    target = DeltaTable(azure.uri("clone"))
    with pytest.raises(InvalidInputError, match=r"names no storage account.*abfss://<container>@<account>"):
        clone_table(DeltaTable(azure.uri("src")), target)
    assert not target.storage.list_tree("")
