"""Picking the I/O mode, and how each mode names a table's files."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.spark.read.arrow_source import worker_root
from airflow_delta_provider.spark.read.files import file_uri, hadoop_path
from airflow_delta_provider.spark.runtime.io_mode import check_io, hadoop_filesystem_available, resolve_io


def test_auto_picks_hadoop_locally_and_arrow_without_a_connector(spark, tmp_path):
    assert resolve_io(spark, str(tmp_path), "auto") == "hadoop"
    assert resolve_io(spark, f"file://{tmp_path}", "auto") == "hadoop"
    assert resolve_io(spark, str(tmp_path), "arrow") == "arrow"
    assert hadoop_filesystem_available(spark, "file")
    assert not hadoop_filesystem_available(spark, "no-such-scheme")
    if hadoop_filesystem_available(spark, "s3a"):
        pytest.skip("this Spark has hadoop-aws")
    assert resolve_io(spark, "s3://bucket/t", "auto") == "arrow"
    assert resolve_io(spark, "abfss://c@acct.dfs.core.windows.net/t", "auto") == "arrow"
    with pytest.raises(InvalidInputError, match=r"s3a://.*io=arrow"):
        resolve_io(spark, "s3://bucket/t", "hadoop")


def test_an_az_uri_without_the_account_is_read_with_arrow(spark):
    """Spark's ABFS needs the account in the URI; pyarrow's store does not."""
    assert resolve_io(spark, "az://container/t", "auto") == "arrow"
    with pytest.raises(InvalidInputError, match="abfss://<container>@<account>"):
        resolve_io(spark, "az://container/t", "hadoop")


def test_unknown_mode_is_bad_input():
    assert check_io("arrow") == "arrow"
    with pytest.raises(InvalidInputError, match="unknown io mode 'fast'"):
        check_io("fast")


@pytest.mark.parametrize(
    "root, add_path, expected",
    [
        ("/data/t", "p=a%20b/f.parquet", "/data/t/p=a b/f.parquet"),
        ("s3://bkt/t", "p=a%20b/f.parquet", "s3a://bkt/t/p=a b/f.parquet"),
        ("s3a://bkt", "f.parquet", "s3a://bkt/f.parquet"),
        ("abfss://c@acct.dfs.core.windows.net/t", "f.parquet", "abfss://c@acct.dfs.core.windows.net/t/f.parquet"),
        ("gs://bkt/t", "s3://other/x/f.parquet", "s3a://other/x/f.parquet"),  # an absolute path elsewhere
        # Hive escapes ':' in a partition folder as %3A, which the log encodes as %253A: decoded once.
        ("s3://b/t", "p=a%253A/x.parquet", "s3a://b/t/p=a%3A/x.parquet"),
        (
            "s3://bkt/clone",
            "s3://bkt/src/ts=2024-01-01%2010%253A00%253A00/part-0.parquet",
            "s3a://bkt/src/ts=2024-01-01 10%3A00%3A00/part-0.parquet",
        ),
    ],
)
def test_hadoop_paths(root, add_path, expected):
    assert hadoop_path(parse_location(root), add_path) == expected


def test_file_uris_are_quoted_like_sparks_metadata_paths():
    assert file_uri("/data/t/p=a b/f.parquet") == "file:/data/t/p=a%20b/f.parquet"
    assert file_uri("s3a://bkt/t/p=a b%/f.parquet") == "s3a://bkt/t/p=a%20b%25/f.parquet"


@pytest.mark.parametrize("root", ["/data/t", "s3://bkt/t", "abfss://c@acct.dfs.core.windows.net/t", "gs://b"])
def test_workers_open_the_same_location(root):
    location = parse_location(root)
    assert parse_location(worker_root(location)) == location
