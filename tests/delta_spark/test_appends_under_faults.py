"""Four writers appending at once through 10% of store requests failing (S3;
Azure too with ``FAULTS_ALL=1``): every append lands exactly once in dense
versions (:func:`~tests.delta.transaction.test_commit_under_faults.append_concurrently`),
and delta-rs and delta-spark read the rows the core reads.

delta-spark's server has no S3 connector: it reads a copy of the table on
the local disk, made after the writers finished (every file as it is in the
bucket).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable as RsTable

from airflow_delta_provider.delta.storage import open_storage
from tests.delta.transaction.test_commit_under_faults import SEEDS, append_concurrently, expected_appends


@pytest.fixture
def store(faulty_store, monkeypatch):
    for key, value in faulty_store.env.items():  # the data files' writes
        monkeypatch.setenv(key, value)
    faulty_store.faults.hold_seconds = 0.8
    return faulty_store


def _download(uri: str, options: dict[str, str], local: Path) -> str:
    storage = open_storage(uri, options)
    for meta in storage.list_tree(""):
        if not meta.is_dir:
            target = local / meta.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(storage.get(meta.path))
    return str(local)


@pytest.mark.parametrize("seed", SEEDS)
def test_concurrent_appends_through_faults_read_alike_by_delta_rs_and_delta_spark(store, delta_spark, tmp_path, seed):
    uri, _failures = append_concurrently(store, seed)
    expected = expected_appends()
    theirs = RsTable(uri, storage_options=store.storage_options).to_pyarrow_table()
    assert sorted(zip(theirs["writer"].to_pylist(), theirs["seq"].to_pylist())) == expected
    local = _download(uri, store.storage_options, tmp_path / "copy")
    assert sorted(delta_spark.rows(local, columns="writer, seq")) == expected
    assert [h["version"] for h in delta_spark.history(local)] == list(range(len(expected) + 1))
