"""delta/storage/existence.py: whether a source path exists, asked before any engine starts."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.storage.existence import path_exists


def test_a_file_a_folder_and_a_missing_path_on_every_backend(storage_backend):
    open_storage(storage_backend.uri("landing"), storage_backend.storage_options).put("day=1/part-0.parquet", b"x")
    options = storage_backend.storage_options
    assert path_exists(storage_backend.uri("landing"), options) is True  # a folder (a key prefix)
    assert path_exists(storage_backend.uri("landing/day=1/part-0.parquet"), options) is True  # a file
    assert path_exists(storage_backend.uri("landing/day=2"), options) is False
    assert path_exists(storage_backend.uri("landin"), options) is False  # a prefix of a name is no folder


@pytest.mark.parametrize(
    "uri",
    [
        "/landing/*/part-*.parquet",  # a glob: Spark expands it
        "/landing/day={1,2}",
        "hdfs://namenode/landing",  # a scheme the core does not know
        "dbfs:/landing",
    ],
)
def test_what_this_process_cannot_judge_is_left_to_the_engine(uri):
    assert path_exists(uri) is None


def test_a_store_that_refuses_this_process_is_left_to_the_engine(azure_container):
    """The engine may hold credentials this process lacks: a refusal is no answer."""
    wrong_key = "d3JvbmcgYnV0IHdlbGwgZm9ybWVkIGtleSB0aGF0IGlzIGxvbmcgZW5vdWdo"
    wrong = {**azure_container.storage_options, "AZURE_STORAGE_ACCOUNT_KEY": wrong_key}
    assert path_exists(azure_container.uri("landing"), wrong) is None
    missing_container = f"az://nocontainer{azure_container.bucket[2:12]}/landing"
    assert path_exists(missing_container, azure_container.storage_options) is None
