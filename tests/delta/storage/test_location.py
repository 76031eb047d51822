"""Unit tests for ``delta/storage/location.py``: every spelling of a table root."""

from __future__ import annotations

import os

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage import TableLocation, parse_location


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bkt/a/b", TableLocation("s3", "bkt", "a/b")),
        ("s3a://bkt/a/b/", TableLocation("s3", "bkt", "a/b")),
        ("s3n://bkt", TableLocation("s3", "bkt", "")),
        ("gs://bkt/t", TableLocation("gs", "bkt", "t")),
        ("gcs://bkt/t", TableLocation("gs", "bkt", "t")),
        ("az://cont/t", TableLocation("az", "cont", "t")),
        ("abfss://cont@acct.dfs.core.windows.net/t/x", TableLocation("az", "cont", "t/x", "acct")),
        ("abfs://cont@acct.blob.core.windows.net/t", TableLocation("az", "cont", "t", "acct")),
        ("s3://bkt/my%20table", TableLocation("s3", "bkt", "my table")),
        ("file:///tmp/x%20y", TableLocation("file", "", "/tmp/x y")),
        ("/tmp/t/", TableLocation("file", "", "/tmp/t")),
    ],
)
def test_parse(uri, expected):
    assert parse_location(uri) == expected


def test_relative_paths_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_location("rel/t").uri == os.path.join(str(tmp_path), "rel", "t")


def test_s3a_and_s3_name_the_same_table():
    assert parse_location("s3a://b/t").uri == parse_location("s3://b/t/").uri == "s3://b/t"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("", "empty"),
        ("hdfs://nn/t", "unsupported storage scheme 'hdfs'"),
        ("s3:///t", "names no bucket"),
        ("abfss://cont@example.com/t", "dfs.core.windows.net"),
        ("file://host/t", "local path"),
    ],
)
def test_bad_locations_are_invalid_input(uri, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_location(uri)


def test_spark_uri_per_store():
    assert parse_location("s3://b/t").spark_uri() == "s3a://b/t"
    assert parse_location("gs://b/t").spark_uri() == "gs://b/t"
    assert parse_location("abfss://c@acct.dfs.core.windows.net/t").spark_uri() == (
        "abfss://c@acct.dfs.core.windows.net/t"
    )
    # abfs:// stays plain (an emulator's HTTP); the Blob host is named as ABFS's account host
    assert parse_location("abfs://c@acct.blob.core.windows.net/t").spark_uri() == "abfs://c@acct.dfs.core.windows.net/t"
    assert parse_location("/x/t").spark_uri() == "/x/t"
    with pytest.raises(InvalidInputError, match="storage account"):
        parse_location("az://c/t").spark_uri()


def test_relative_and_child():
    root = parse_location("s3://b/t")
    assert root.relative("s3a://b/t/p=1/x.parquet") == "p=1/x.parquet"
    assert root.relative("s3://b/other/x.parquet") is None
    assert root.relative("s3://c/t/x.parquet") is None
    assert root.relative("gs://b/t/x.parquet") is None
    assert root.relative("not a uri ://") is None
    assert root.child("p=1/x.parquet") == "s3://b/t/p=1/x.parquet"
    local = parse_location("/data/t")
    assert local.relative("file:/data/t/a%20b.parquet") == "a b.parquet"
    assert local.relative("/data/tt/x") is None
    assert local.child("x") == "/data/t/x"
