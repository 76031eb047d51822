"""``TableStorage`` on every backend (local, S3 on moto, Azure on Azurite),
and the errors a user sees when a store is missing, locked or unsafe."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import (
    StorageAccessDeniedError,
    StorageError,
    StorageNotFoundError,
    TableNotFoundError,
    UnsafeStorageError,
)
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.table import DeltaTable


@pytest.fixture
def storage(storage_backend):
    return open_storage(storage_backend.uri("t"), storage_backend.storage_options)


def test_listing_reading_and_writing(storage):
    for name in ("00000000000000000000.json", "00000000000000000001.json", "00000000000000000002.json"):
        storage.put(f"_delta_log/{name}", name.encode())
    storage.put("_delta_log/_sidecars/x.parquet", b"s")
    storage.put("p=1/a.parquet", b"abc")

    names = [m.name for m in storage.list_dir("_delta_log")]
    assert names == ["00000000000000000000.json", "00000000000000000001.json", "00000000000000000002.json"]
    assert [m.name for m in storage.list_dir("_delta_log", after="00000000000000000001.json")] == [
        "00000000000000000002.json"
    ]
    assert storage.list_dir("nothing") == []
    dirs, files = storage.list_top("")
    assert sorted(d.path for d in dirs) == ["_delta_log", "p=1"] and files == []
    tree = storage.list_tree("p=1")
    assert [(m.path, m.size) for m in tree if not m.is_dir] == [("p=1/a.parquet", 3)]

    assert storage.get("p=1/a.parquet") == b"abc"
    head = storage.head("p=1/a.parquet")
    assert (head.size, head.name) == (3, "a.parquet") and head.mtime_ms > 0
    assert storage.exists("p=1/a.parquet") and not storage.exists("p=1/b.parquet")
    with pytest.raises(FileNotFoundError):
        storage.get("p=1/b.parquet")
    storage.put("p=1/a.parquet", b"replaced")
    assert storage.get("p=1/a.parquet") == b"replaced"
    with storage.open_input_file("p=1/a.parquet") as f:
        assert f.read() == b"replaced"


def test_ranged_reads(storage):
    storage.put("r/f.bin", bytes(range(100)))
    assert storage.get_range("r/f.bin", 90, 100) == bytes(range(90, 100))
    assert storage.get_range("r/f.bin", 0, 3) == b"\x00\x01\x02"


def test_put_if_absent_claims_a_name_once(storage):
    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"first")
    assert not storage.put_if_absent("_delta_log/00000000000000000000.json", b"second")
    assert storage.get("_delta_log/00000000000000000000.json") == b"first"


def test_deletes(storage):
    for i in range(5):
        storage.put(f"d/{i}.bin", b"x")
    storage.delete("d/0.bin")
    storage.delete("d/0.bin")  # absent: nothing happens
    assert storage.delete_many([f"d/{i}.bin" for i in range(1, 5)]) == 4
    assert [m for m in storage.list_tree("d") if not m.is_dir] == []


def test_move(storage):
    storage.put("_staging/p=1/part-0.parquet", b"data")
    storage.put("p=1/old.parquet", b"old")
    storage.move("_staging/p=1/part-0.parquet", "p=1/new.parquet")
    storage.move("p=1/new.parquet", "p=1/old.parquet")  # replaces
    assert storage.get("p=1/old.parquet") == b"data"
    assert [m.path for m in storage.list_tree("") if not m.is_dir] == ["p=1/old.parquet"]
    with pytest.raises(FileNotFoundError):
        storage.move("_staging/none.parquet", "x.parquet")


def test_delete_many_deletes_the_rest_when_some_keys_are_gone(storage, monkeypatch):
    """Azure (and GCS) fail a whole bulk delete on one missing key; the other
    keys of the batch must still go. Small batches make several run at once."""
    from airflow_delta_provider.delta.storage import store

    monkeypatch.setattr(store, "DELETE_BATCH", 3)
    for i in range(10):
        storage.put(f"d/{i}.bin", b"x")
    storage.delete_many([f"d/{i}.bin" for i in range(12)])  # 10 and 11 never existed
    assert [m.path for m in storage.list_tree("d") if not m.is_dir] == []


def test_async_twins(storage):
    storage.put("_delta_log/00000000000000000000.json", b"v0")
    storage.put("_delta_log/00000000000000000001.json", b"v1")

    async def ask():
        listed = await storage.list_dir_async("_delta_log", after="00000000000000000000.json")
        body = await storage.get_async("_delta_log/00000000000000000001.json")
        head = await storage.head_async("_delta_log/00000000000000000000.json")
        try:
            await storage.get_async("_delta_log/missing")
        except FileNotFoundError:
            missing = True
        return [m.name for m in listed], body, head.size, missing

    assert asyncio.run(ask()) == (["00000000000000000001.json"], b"v1", 2, True)


# --- bad input: each a clear error, and nothing written --------------------------------


def test_missing_bucket_is_named(s3_bucket, moto_server):
    uri = f"s3://no-such-bucket-{s3_bucket.bucket}/t"
    with pytest.raises(StorageNotFoundError, match="bucket 'no-such-bucket-"):
        DeltaTable(uri, s3_bucket.storage_options).snapshot()
    with pytest.raises(StorageNotFoundError):
        open_storage(uri, s3_bucket.storage_options).put_if_absent("_delta_log/00000000000000000000.json", b"{}")


def test_missing_container_is_named(azure_container):
    uri = f"az://nocontainer{azure_container.bucket[2:12]}/t"
    with pytest.raises(StorageNotFoundError, match="container"):
        DeltaTable(uri, azure_container.storage_options).snapshot()


def test_wrong_credentials_are_named_without_the_secret(azure_container):
    good = azure_container.storage_options
    open_storage(azure_container.uri("t"), good).put("_delta_log/00000000000000000000.json", b"{}")
    wrong_key = "d3JvbmcgYnV0IHdlbGwgZm9ybWVkIGtleSB0aGF0IGlzIGxvbmcgZW5vdWdo"
    bad = {**good, "AZURE_STORAGE_ACCOUNT_KEY": wrong_key}
    with pytest.raises(StorageError, match="access denied; check the store's credentials") as info:
        DeltaTable(azure_container.uri("t"), bad).latest_version()
    assert wrong_key not in str(info.value) and good["AZURE_STORAGE_ACCOUNT_KEY"] not in str(info.value)
    # A commit with the wrong key is refused, and nothing is written.
    with pytest.raises(StorageAccessDeniedError, match="access denied"):
        open_storage(azure_container.uri("t"), bad).put_if_absent("_delta_log/00000000000000000001.json", b"{}")
    listed = open_storage(azure_container.uri("t"), good).list_tree("")
    assert [m.path for m in listed if not m.is_dir] == ["_delta_log/00000000000000000000.json"]


def test_a_store_without_atomic_create_gets_no_commit(stoppable_s3, new_table, monkeypatch):
    for key, value in stoppable_s3.env.items():
        monkeypatch.setenv(key, value)
    storage = open_storage(stoppable_s3.uri("t"))
    with (
        stoppable_s3.ignoring_if_none_match(),
        pytest.raises(UnsafeStorageError, match="does not honour an atomic create") as info,
    ):
        new_table(stoppable_s3.uri("t"), pa.schema([("id", pa.int64())]))
    assert "127.0.0.1" in str(info.value) or "s3://" in str(info.value)
    assert storage.list_tree("") == []  # no commit, and the probe object is gone
    with pytest.raises(TableNotFoundError):
        DeltaTable(stoppable_s3.uri("t")).snapshot()


def test_trusting_the_store_skips_the_probe(stoppable_s3):
    trusting = open_storage(stoppable_s3.uri("t"), {**stoppable_s3.storage_options, "delta_atomic_create": "trust"})
    with stoppable_s3.ignoring_if_none_match():
        assert trusting.put_if_absent("_delta_log/00000000000000000000.json", b"{}")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"google_service_account": "/nonexistent/key.json"}, "Unable to open service account file"),
        ({"google_service_account_key": "not json"}, "Unable to decode service account"),
    ],
)
def test_gcs_without_usable_credentials_is_a_clear_error(options, message, monkeypatch):
    """No emulator exists for GCS here: only what fails before any request is checked
    (with no credentials at all, object_store would ask the instance metadata server)."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(StorageError, match=f"cannot open gs://bkt/t: .*{message}"):
        DeltaTable("gs://bkt/t", options)


def test_unknown_storage_option_is_invalid_input(s3_bucket):
    from airflow_delta_provider.delta.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="bogus"):
        open_storage(s3_bucket.uri("t"), {**s3_bucket.storage_options, "bogus": "1"})


def test_repr_and_errors_never_show_secrets(s3_bucket):
    storage = open_storage(s3_bucket.uri("t"), s3_bucket.storage_options)
    assert s3_bucket.secret not in repr(storage)
    with pytest.raises(FileNotFoundError) as info:
        storage.get("missing")
    assert s3_bucket.secret not in str(info.value)


def test_a_local_delete_takes_hadoops_checksum_along(tmp_path):
    """Spark writes ``.name.crc`` beside each local file and Hadoop deletes it with the file; so do we
    (a VACUUM by delta-spark leaves no checksum of a deleted file behind, found by the interop matrix)."""
    storage = open_storage(str(tmp_path))
    for name in ("a.parquet", "b.bin", "c.json"):
        storage.put(f"d/{name}", b"x")
        storage.put(f"d/.{name}.crc", b"crc")
    storage.put("d/.kept.crc", b"crc")
    storage.delete("d/a.parquet")
    assert storage.delete_many(["d/b.bin", "d/c.json"]) == 2  # the checksums are not counted
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [".kept.crc"]
