"""Unit tests for ``delta/table_properties.py``: table properties and their defaults."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError

SCHEMA = '{"type":"struct","fields":[]}'
DAY = 86_400_000


def md(**conf: str) -> Metadata:
    return Metadata.new(SCHEMA, (), conf, created_time=0)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("interval 7 days", 7 * DAY),
        ("interval 1 day", DAY),
        ("INTERVAL 2 HOURS", 7_200_000),
        ("interval 30 minutes", 1_800_000),
        ("interval 1 week", 7 * DAY),
        ("interval 15 seconds", 15_000),
        ("interval 250 milliseconds", 250),
        ("3 days", 3 * DAY),
        ("  interval   0 seconds ", 0),
    ],
)
def test_parse_interval(text, ms):
    assert table_properties.parse_interval(text) == ms


@pytest.mark.parametrize("text", ["", "7 days ago", "interval days", "interval 1 fortnight", "interval x days"])
def test_parse_interval_rejects_malformed_text(text):
    with pytest.raises(InvalidInputError, match="interval"):
        table_properties.parse_interval(text)


def test_defaults_follow_delta_spark():
    m = md()
    assert table_properties.checkpoint_interval(m) == 10
    assert table_properties.deleted_file_retention_ms(m) == 7 * DAY
    assert table_properties.log_retention_ms(m) == 30 * DAY
    assert table_properties.expired_log_cleanup_enabled(m) is True
    assert table_properties.append_only(m) is False
    assert table_properties.num_indexed_cols(m) == 32
    assert table_properties.checkpoint_stats_as_json(m) is True


def test_table_properties_override_the_defaults():
    m = md(
        **{
            "delta.checkpointInterval": "3",
            "delta.deletedFileRetentionDuration": "interval 2 days",
            "delta.logRetentionDuration": "interval 1 hour",
            "delta.enableExpiredLogCleanup": "false",
            "delta.appendOnly": "TRUE",
            "delta.dataSkippingNumIndexedCols": "5",
        }
    )
    assert table_properties.checkpoint_interval(m) == 3
    assert table_properties.deleted_file_retention_ms(m) == 2 * DAY
    assert table_properties.log_retention_ms(m) == 3_600_000
    assert table_properties.expired_log_cleanup_enabled(m) is False
    assert table_properties.append_only(m) is True
    assert table_properties.num_indexed_cols(m) == 5


@pytest.mark.parametrize(
    ("key", "value", "getter"),
    [
        ("delta.checkpointInterval", "ten", table_properties.checkpoint_interval),
        ("delta.checkpointInterval", "0", table_properties.checkpoint_interval),
        ("delta.checkpointInterval", "-5", table_properties.checkpoint_interval),
        ("delta.appendOnly", "yes", table_properties.append_only),
        ("delta.deletedFileRetentionDuration", "a week", table_properties.deleted_file_retention_ms),
    ],
)
def test_malformed_properties_are_errors_naming_the_property(key, value, getter):
    with pytest.raises(InvalidInputError) as err:
        getter(md(**{key: value}))
    assert key in str(err.value) or "interval" in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("134217728", 134217728), ("128mb", 128 << 20), ("4MiB", 4 << 20), (" 1g ", 1 << 30), ("512b", 512),
     ("", None), (None, None), ("lots", None), ("-1", None)],
)  # fmt: skip
def test_byte_sizes_as_spark_and_delta_write_them(text, expected):
    assert table_properties.parse_byte_size(text) == expected


# --- file-size and auto-optimize properties users set (issue 25) -------------------------------

FILE_SIZE_PROPERTIES = {
    "delta.targetFileSize": "64mb",
    "delta.tuneFileSizesForRewrites": "TRUE",
    "delta.autoOptimize.optimizeWrite": "true",
    "delta.autoOptimize.autoCompact": "False",
}


def test_file_size_and_auto_optimize_properties_are_accepted_and_optimize_reads_the_target():
    from airflow_delta_provider.delta.table_properties import target_file_size

    got = table_properties.with_properties(md(), FILE_SIZE_PROPERTIES)
    assert got.configuration == {
        "delta.targetFileSize": "64mb",
        "delta.tuneFileSizesForRewrites": "true",
        "delta.autoOptimize.optimizeWrite": "true",
        "delta.autoOptimize.autoCompact": "false",  # lowered, as delta-spark's AUTO_COMPACT reads it
    }
    assert target_file_size(got.configuration) == 64 * 1024 * 1024


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.targetFileSize", "big"),
        ("delta.targetFileSize", "0"),
        ("delta.tuneFileSizesForRewrites", "yes"),
        ("delta.autoOptimize.optimizeWrite", "1"),
        ("delta.autoOptimize.autoCompact", "auto"),
    ],
)
def test_malformed_file_size_properties_are_refused(key, value):
    with pytest.raises(InvalidInputError, match=key.replace(".", r"\.")):
        table_properties.with_properties(md(), {key: value})


def test_delta_rs_reads_a_table_with_the_file_size_properties(tmp_path, new_table):
    import pyarrow as pa

    deltalake = pytest.importorskip("deltalake")
    from airflow_delta_provider.delta.table import DeltaTable

    path = str(tmp_path / "t")
    new_table(path, pa.schema([("id", pa.int64())]))
    table = DeltaTable(path)
    snap = table.snapshot()
    txn = table.transaction("SET TBLPROPERTIES", snapshot=snap)
    txn.update_metadata(table_properties.with_properties(snap.metadata, FILE_SIZE_PROPERTIES))
    txn.commit(metrics=None, token=None)
    config = deltalake.DeltaTable(path).metadata().configuration
    assert config["delta.targetFileSize"] == "64mb"
    assert config["delta.autoOptimize.autoCompact"] == "false"


# --- delta.isolationLevel (issue 25) ------------------------------------------------------------


def test_isolation_level_defaults_to_serializable_and_is_set_in_its_canonical_spelling():
    assert table_properties.isolation_level(md()) == "Serializable"  # delta-spark's DeltaConfigs default
    got = table_properties.with_properties(md(), {"delta.isolationLevel": "writeserializable"})
    assert got.configuration == {"delta.isolationLevel": "WriteSerializable"}
    assert table_properties.isolation_level(got) == "WriteSerializable"


@pytest.mark.parametrize("value", ["SnapshotIsolation", "serial", ""])
def test_other_isolation_levels_are_refused_naming_the_property(value):
    with pytest.raises(InvalidInputError, match=r"delta\.isolationLevel"):
        table_properties.with_properties(md(), {"delta.isolationLevel": value})
    with pytest.raises(InvalidInputError, match=r"delta\.isolationLevel"):
        table_properties.isolation_level(md(**{"delta.isolationLevel": value}))


def test_auto_compact_and_optimize_write_readers_take_metadata_or_a_configuration() -> None:
    for reader, key in (
        (table_properties.auto_compact_enabled, table_properties.AUTO_COMPACT),
        (table_properties.optimize_write_enabled, table_properties.AUTO_OPTIMIZE_WRITE),
    ):
        assert reader({}) is False and reader({key: " TRUE "}) is True and reader({key: "false"}) is False
        assert reader(Metadata.new('{"type":"struct","fields":[]}', [], {key: "true"}, created_time=0)) is True
        with pytest.raises(InvalidInputError, match="is not a boolean"):
            reader({key: "yes"})


def test_random_prefix_length_follows_delta_spark() -> None:
    from airflow_delta_provider.delta.partitions import random_file_prefix

    tp = table_properties

    assert tp.random_prefix_length({}) == 0
    assert tp.random_prefix_length({"delta.randomizeFilePrefixes": "false", "delta.randomPrefixLength": "5"}) == 0
    assert tp.random_prefix_length({"delta.randomizeFilePrefixes": "true"}) == 2
    assert tp.random_prefix_length({"delta.randomizeFilePrefixes": "TRUE", "delta.randomPrefixLength": "4"}) == 4
    with pytest.raises(InvalidInputError, match="randomPrefixLength"):
        tp.random_prefix_length({"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "0"})
    prefix = random_file_prefix(3)
    assert len(prefix) == 3 and prefix.isalnum() and prefix.isascii()


def test_other_engines_properties_are_settable_and_validated() -> None:
    tp = table_properties
    md = Metadata(id="x", schema_string='{"type":"struct","fields":[]}')
    md = tp.with_properties(
        md,
        {
            "delta.randomizeFilePrefixes": "True",
            "delta.setTransactionRetentionDuration": "interval 2 days",
            "delta.checkpoint.writeStatsAsStruct": "true",
        },
    )
    assert md.configuration["delta.randomizeFilePrefixes"] == "true"
    assert tp.set_transaction_retention_ms(md) == 2 * 86_400_000
    assert tp.checkpoint_stats_as_struct(md) and tp.checkpoint_stats_as_json(md)
    with pytest.raises(InvalidInputError, match="interval"):
        tp.with_properties(md, {"delta.setTransactionRetentionDuration": "soon"})
    with pytest.raises(InvalidInputError, match="true or false"):
        tp.with_properties(md, {"delta.checkpoint.writeStatsAsJson": "maybe"})
