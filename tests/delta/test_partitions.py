"""Tests for delta/partitions.py: Hive escaping, path encoding, value (de)serialization."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_delta_provider.delta.actions.model import AddFile, Metadata, parse_commit
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import (
    HIVE_DEFAULT_PARTITION,
    decode_path,
    encode_path,
    escape_partition_value,
    parse_partition_value,
    parse_partition_values,
    partition_dir,
    serialize_partition_value,
    to_absolute,
    to_float32,
    unescape_partition_value,
)

# The character list of Spark's ExternalCatalogUtils.charToEscape (non-Windows).
SPARK_ESCAPED = {chr(c) for c in range(1, 0x20)} | set("\"#%'*/:=?\\\x7f{[]^")


def _log(table: Path) -> tuple[Metadata, list[AddFile]]:
    """The last metadata and the adds of a small golden table (no removes in these)."""
    metadata, adds = None, []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in parse_commit(commit.read_bytes()):
            if isinstance(action, Metadata):
                metadata = action
            elif isinstance(action, AddFile):
                adds.append(action)
    assert metadata is not None
    return metadata, adds


# --- Hive escaping -----------------------------------------------------------


@pytest.mark.parametrize("code", range(0, 0x80))
def test_escape_touches_exactly_sparks_ascii_set(code):
    c = chr(code)
    expected = f"%{code:02X}" if c in SPARK_ESCAPED else c
    assert escape_partition_value(c) == expected


def test_escape_leaves_non_ascii_and_space_alone():
    assert escape_partition_value("é ü 日本 +") == "é ü 日本 +"


@given(st.text())
def test_unescape_inverts_escape(s):
    assert unescape_partition_value(escape_partition_value(s)) == s


@pytest.mark.parametrize(
    ("escaped", "plain"),
    [("bar+%2521", "bar+%21"), ("%zz", "%zz"), ("a%4", "a%4"), ("%3a%3A", "::"), ("100%", "100%")],
)
def test_unescape_keeps_invalid_sequences_like_spark(escaped, plain):
    assert unescape_partition_value(escaped) == plain


def test_partition_dir_nulls_empties_and_column_names():
    values = {"a": "1", "b": None, "c": "", "d=x": "p/q"}
    assert partition_dir(["a", "b", "c", "d=x"], values) == (
        f"a=1/b={HIVE_DEFAULT_PARTITION}/c={HIVE_DEFAULT_PARTITION}/d%3Dx=p%2Fq"
    )
    assert partition_dir(["a"], {}) == f"a={HIVE_DEFAULT_PARTITION}"
    assert partition_dir([], {"a": "1"}) == ""


def test_partition_dir_writes_iso_timestamps_the_spark_way():
    types = {"ts": "timestamp"}
    assert partition_dir(["ts"], {"ts": "2021-09-08T11:11:11.000000Z"}, types) == "ts=2021-09-08 11%3A11%3A11"
    assert partition_dir(["ts"], {"ts": "2021-09-08T11:11:11.250000Z"}, types) == "ts=2021-09-08 11%3A11%3A11.25"


# --- Paths -------------------------------------------------------------------


def test_encode_path_follows_java_uri_rules():
    assert encode_path("special p@#h") == "special%20p@%23h"
    assert encode_path("a=b+c:d,e;f$g&h!i~j*k'l(m)n/x") == "a=b+c:d,e;f$g&h!i~j*k'l(m)n/x"
    assert encode_path('%"<>?[]{}|\\^`') == "%25%22%3C%3E%3F%5B%5D%7B%7D%7C%5C%5E%60"
    # Non-ASCII letters stay; non-ASCII spaces and controls are UTF-8 escaped.
    assert encode_path("é\u00a0\u0085") == "é%C2%A0%C2%85"


@given(st.text())
def test_decode_inverts_encode(s):
    assert decode_path(encode_path(s)) == s


@pytest.mark.parametrize(
    "table",
    [
        "data-reader-partition-values",
        "data-reader-escaped-chars",
        "kernel-timestamp-partition-col-ISO8601",
        "data-reader-timestamp_ntz",
    ],
)
def test_golden_add_paths_are_encoded_hive_dirs(golden_dir, table):
    root = golden_dir / table
    metadata, adds = _log(root)
    types = {f["name"]: f["type"] for f in metadata.schema_json["fields"]}
    assert adds
    for add in adds:
        directory, _, name = decode_path(add.path).rpartition("/")
        assert partition_dir(metadata.partition_columns, add.partition_values, types) == directory
        assert encode_path(f"{directory}/{name}") == add.path
        assert Path(to_absolute(str(root), add.path)).is_file()
        assert Path(to_absolute(root.as_uri(), add.path)).is_file()


def test_golden_special_character_path(golden_dir):
    _, adds = _log(golden_dir / "log-replay-special-characters")
    assert {a.path for a in adds} == {encode_path("special p@#h")}


@pytest.mark.parametrize("table", ["canonicalized-paths-special-a", "canonicalized-paths-special-b"])
def test_golden_canonicalized_absolute_paths(golden_dir, table):
    paths = [
        json.loads(line)[key]["path"]
        for commit in sorted((golden_dir / table / "_delta_log").glob("*.json"))
        for line in commit.read_text().splitlines()
        for key in ("add", "remove")
        if key in json.loads(line)
    ]
    assert len(paths) >= 2
    assert {to_absolute("/elsewhere", p) for p in paths} == {"/some/unqualified/with space/p@#h"}


def test_to_absolute_forms():
    assert to_absolute("/t", "a=1/f%20x.parquet") == "/t/a=1/f x.parquet"
    assert to_absolute("/t/", "..//u/f") == "/u/f"
    assert to_absolute("file:///t%20x", "f") == "/t x/f"
    assert to_absolute("/t", "file:/abs/f%25") == "/abs/f%"
    assert to_absolute("/t", "s3://bucket/k%20y") == "s3://bucket/k y"


# --- Values ------------------------------------------------------------------

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("value", "delta_type", "text"),
    [
        (True, "boolean", "true"),
        (False, "boolean", "false"),
        (-7, "long", "-7"),
        (1.0, "double", "1.0"),
        (1e10, "double", "1.0E10"),
        (1e-5, "double", "1.0E-5"),
        (0.001, "double", "0.001"),
        (123.456, "double", "123.456"),
        (-0.0, "double", "-0.0"),
        (math.inf, "double", "Infinity"),
        (math.nan, "double", "NaN"),
        (0.1, "float", "0.1"),
        (16777217.0, "float", "1.6777216E7"),
        (Decimal("1"), "decimal(5,2)", "1.00"),
        (Decimal("1E-7"), "decimal(10,8)", "0.00000010"),
        (dt.date(2021, 9, 8), "date", "2021-09-08"),
        (dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC), "timestamp", "2021-09-08T11:11:11.000000Z"),
        (
            dt.datetime(2021, 9, 8, 13, 11, 11, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "timestamp",
            "2021-09-08T11:11:11.000005Z",
        ),
        # timestamp_ntz as delta-spark logs it: Spark's text, no zone, no trailing zeros.
        (dt.datetime(2021, 9, 8, 11, 11, 11), "timestamp_ntz", "2021-09-08 11:11:11"),
        (dt.datetime(2021, 11, 18, 2, 30, 0, 123450), "timestamp_ntz", "2021-11-18 02:30:00.12345"),
        (dt.datetime(5, 1, 2, 3, 4, 5, 6), "timestamp_ntz", "0005-01-02 03:04:05.000006"),
        ("a/b=c", "string", "a/b=c"),
        ("", "string", None),
        (None, "integer", None),
        ("é".encode(), "binary", "é"),
    ],
)
def test_serialize_partition_value(value, delta_type, text):
    assert serialize_partition_value(value, delta_type) == text


@pytest.mark.parametrize(
    ("value", "delta_type"),
    [
        (True, "integer"),
        (1.5, "long"),
        ("x", "boolean"),
        (dt.datetime(2021, 1, 1), "date"),
        (dt.date(2021, 1, 1), "timestamp"),
        (dt.datetime(2021, 1, 1, tzinfo=UTC), "timestamp_ntz"),
        (b"\xff", "binary"),
        ([1], "array"),
    ],
)
def test_serialize_refuses_wrong_values(value, delta_type):
    with pytest.raises(InvalidInputError):
        serialize_partition_value(value, delta_type)


def test_parse_both_timestamp_forms():
    legacy = parse_partition_value("2021-09-08 11:11:11", "timestamp")
    iso = parse_partition_value("2021-09-08T11:11:11.000000Z", "timestamp")
    assert legacy == iso == dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)
    assert legacy.utcoffset() == dt.timedelta(0)
    assert parse_partition_value("2021-09-08 11:11:11.5", "timestamp").microsecond == 500000
    assert parse_partition_value("2021-09-08 11:11:11.123456", "timestamp_ntz") == dt.datetime(
        2021, 9, 8, 11, 11, 11, 123456
    )


@pytest.mark.parametrize("text", [None, ""])
@pytest.mark.parametrize("delta_type", ["string", "integer", "date", "timestamp", "decimal(3,1)", "boolean"])
def test_parse_null_and_empty(text, delta_type):
    assert parse_partition_value(text, delta_type) is None


@pytest.mark.parametrize(
    ("text", "delta_type"), [("x", "integer"), ("maybe", "boolean"), ("2021-13-01", "date"), ("1.2.3", "decimal(3,1)")]
)
def test_parse_refuses_bad_text(text, delta_type):
    with pytest.raises(InvalidInputError, match=delta_type.split("(")[0]):
        parse_partition_value(text, delta_type)


def test_golden_timestamp_ntz_values_serialize_back_as_delta_spark_logged_them(golden_dir):
    _, adds = _log(golden_dir / "data-reader-timestamp_ntz")
    logged = {a.partition_values["tsNtzPartition"] for a in adds}
    assert logged == {"2013-07-05 17:01:00.123456", "2021-11-18 02:30:00.123456", None}
    for text in logged:
        value = parse_partition_value(text, "timestamp_ntz")
        assert value is None or value.tzinfo is None
        assert serialize_partition_value(value, "timestamp_ntz") == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2021-09-08 11:11:11Z", "no time zone"),
        ("2021-09-08T11:11:11.000000+02:00", "no time zone"),
        ("2021-09-08 11:11", "expected yyyy-MM-dd HH:mm:ss"),
        ("not a time", "expected yyyy-MM-dd HH:mm:ss"),
        ("2021-02-30 00:00:00", "day is out of range"),
        ("2021-09-08 24:00:00", "hour must be in"),
    ],
)
def test_malformed_timestamp_ntz_partition_value_is_a_typed_error(text, problem):
    with pytest.raises(InvalidInputError, match="timestamp_ntz partition value") as err:
        parse_partition_value(text, "timestamp_ntz")
    assert repr(text) in str(err.value) and problem in str(err.value)


def test_timestamp_ntz_partition_value_forms():
    micros = dt.datetime(2021, 9, 8, 11, 11, 11, 123456)
    assert parse_partition_value("2021-09-08 11:11:11.123456", "timestamp_ntz") == micros
    assert parse_partition_value("2021-09-08T11:11:11.123456", "timestamp_ntz") == micros
    # Digits past the microseconds are dropped, as Spark drops them.
    assert parse_partition_value("2021-09-08 11:11:11.123456789", "timestamp_ntz") == micros
    assert parse_partition_value(" 2021-09-08 11:11:11.5 ", "timestamp_ntz") == micros.replace(microsecond=500000)
    # A date partition widened to timestamp_ntz keeps its logged dates: midnight, as Spark casts them.
    assert parse_partition_value("2021-09-08", "timestamp_ntz") == dt.datetime(2021, 9, 8)


def test_a_float_near_the_largest_float32_round_trips():
    """Shorter digits round up past float32's range (an OverflowError once)."""
    for value in (3.4025001647762064e38, 3.4028234663852886e38, -3.4028234663852886e38):
        text = serialize_partition_value(value, "float")
        assert parse_partition_value(text, "float") == value


def test_parse_float_holds_a_single_precision_value():
    assert parse_partition_value("0.1", "float") == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert parse_partition_value("0.1", "double") == 0.1
    assert math.isnan(parse_partition_value("NaN", "double"))
    assert parse_partition_value("-Infinity", "float") == -math.inf


_ROUND_TRIP = st.one_of(
    st.tuples(st.integers(-(2**63), 2**63 - 1), st.just("long")),
    st.tuples(st.booleans(), st.just("boolean")),
    st.tuples(st.floats(allow_nan=False), st.just("double")),
    st.tuples(st.floats(width=32, allow_nan=False), st.just("float")),
    st.tuples(
        st.decimals(places=3, allow_nan=False, allow_infinity=False, max_value=10**9, min_value=-(10**9)),
        st.just("decimal(12,3)"),
    ),
    st.tuples(st.dates(), st.just("date")),
    st.tuples(st.datetimes(timezones=st.just(UTC)), st.just("timestamp")),
    st.tuples(st.datetimes(), st.just("timestamp_ntz")),
    st.tuples(st.text(min_size=1), st.just("string")),
)


@given(_ROUND_TRIP)
def test_serialize_parse_round_trip(case):
    value, delta_type = case
    text = serialize_partition_value(value, delta_type)
    assert text is not None
    back = parse_partition_value(text, delta_type)
    if delta_type == "float":
        assert back == to_float32(value)
    else:
        assert back == value


def test_parse_partition_values_matches_delta_rs(golden_dir):
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa

    root = golden_dir / "data-reader-partition-values"
    metadata, adds = _log(root)
    oracle = {
        row["path"]: {k.removeprefix("partition."): v for k, v in row.items() if k.startswith("partition.")}
        for row in pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True)).to_pylist()
    }
    assert len(oracle) == len(adds) == 3
    for add in adds:
        typed = parse_partition_values(add.partition_values, metadata.schema_json, metadata.partition_columns)
        assert typed == oracle[add.path]


def test_parse_partition_values_is_case_insensitive_and_checks_the_schema():
    schema = {"type": "struct", "fields": [{"name": "Day", "type": "date", "nullable": True, "metadata": {}}]}
    assert parse_partition_values({"day": "2021-01-02"}, schema, ["DAY"]) == {"DAY": dt.date(2021, 1, 2)}
    assert parse_partition_values({}, schema, ["Day"]) == {"Day": None}
    with pytest.raises(InvalidInputError, match="missing"):
        parse_partition_values({}, schema, ["missing"])


@pytest.mark.parametrize(
    ("root", "add_path", "expected"),
    [
        ("/lake/src dir", "p=a%20b/part-0.parquet", "file:/lake/src%20dir/p=a%20b/part-0.parquet"),
        ("/lake/src", "100%25/x.parquet", "file:/lake/src/100%25/x.parquet"),
        # In the scheme the source was addressed with, as delta-spark qualifies it.
        ("s3a://bucket/src", "day=1/x.parquet", "s3a://bucket/src/day=1/x.parquet"),
        ("s3://bucket", "x.parquet", "s3://bucket/x.parquet"),
        (
            "abfss://c@acct.dfs.core.windows.net/t",
            "x.parquet",
            "abfss://c@acct.dfs.core.windows.net/t/x.parquet",
        ),
        ("/lake/src", "s3://other/x.parquet", "s3://other/x.parquet"),  # absolute already
    ],
)
def test_absolute_uri_names_a_file_for_another_table_log(root, add_path, expected) -> None:
    from airflow_delta_provider.delta.partitions import absolute_uri, relative_to_root
    from airflow_delta_provider.delta.storage import parse_location

    location = parse_location(root)
    uri = absolute_uri(location, add_path)
    assert uri == expected
    assert to_absolute("/elsewhere", uri) == to_absolute(location.uri, add_path)
    assert relative_to_root("/elsewhere", uri) is None
    if "://" not in add_path:
        assert relative_to_root(location.uri, uri) == unquote(add_path)


def test_absolute_uri_refuses_a_path_above_the_root() -> None:
    from airflow_delta_provider.delta.partitions import absolute_uri
    from airflow_delta_provider.delta.storage import parse_location

    with pytest.raises(InvalidInputError):
        absolute_uri(parse_location("/lake/t"), "../other/x.parquet")


def test_absolute_uri_refuses_an_azure_root_without_its_account() -> None:
    from airflow_delta_provider.delta.partitions import absolute_uri
    from airflow_delta_provider.delta.storage import parse_location

    with pytest.raises(InvalidInputError, match=r"az://c/t names no storage account.*abfss://<container>@<account>"):
        absolute_uri(parse_location("az://c/t"), "x.parquet")
    assert absolute_uri(parse_location("abfs://c@acct.dfs.core.windows.net/t"), "x.parquet") == (
        "abfs://c@acct.dfs.core.windows.net/t/x.parquet"
    )
    assert parse_location("s3a://b/t") == parse_location("s3://b/t")  # the spelling is not the identity


def test_file_storage_opens_the_store_of_a_file_outside_the_root(tmp_path) -> None:
    from airflow_delta_provider.delta.partitions import file_storage
    from airflow_delta_provider.delta.storage import open_storage

    (tmp_path / "src" / "p=a").mkdir(parents=True)
    (tmp_path / "src" / "p=a" / "x y.parquet").write_bytes(b"data")
    table = open_storage(str(tmp_path / "clone"))
    assert file_storage(table, "p=a/x%20y.parquet") == (table, "p=a/x y.parquet")
    holder, rel = file_storage(table, f"file:{tmp_path}/src/p=a/x%20y.parquet")
    assert holder is not table and holder.get(rel) == b"data"


def test_absolute_object_store_paths_are_decoded_once():
    """A clone's add names the source key ``ts=... 10%3A00`` as ``%253A``:
    decoded once, and never parsed again as a URI."""
    from airflow_delta_provider.delta.partitions import file_location, file_storage, relative_to_root
    from airflow_delta_provider.delta.storage import TableLocation, open_storage, parse_location

    add = "s3://bkt/src/ts=2024-01-01%2010%253A00%253A00/part-0.parquet"
    found = file_location(parse_location("s3://bkt/clone"), add)
    assert found == TableLocation("s3", "bkt", "src/ts=2024-01-01 10%3A00%3A00/part-0.parquet")
    assert found.parent().path == "src/ts=2024-01-01 10%3A00%3A00" and found.name == "part-0.parquet"
    assert relative_to_root("s3://bkt/src", add) == "ts=2024-01-01 10%3A00%3A00/part-0.parquet"
    assert relative_to_root(parse_location("s3a://bkt/src"), add.replace("s3:", "s3a:")) == (
        "ts=2024-01-01 10%3A00%3A00/part-0.parquet"
    )
    relative = file_location(parse_location("s3://bkt/t"), "p=a%253A/x.parquet")
    assert relative.path == "t/p=a%3A/x.parquet"
    storage, name = file_storage(open_storage("s3://bkt/clone", {"aws_region": "us-east-1"}), add)
    assert (storage.root, name) == ("s3://bkt", "src/ts=2024-01-01 10%3A00%3A00/part-0.parquet")
    # One client per bucket: another file of the same bucket reuses the storage.
    table = open_storage("s3://bkt/clone", {"aws_region": "us-east-1"})
    first, _ = file_storage(table, add)
    second, other = file_storage(table, "s3://bkt/src/p=b/part-1.parquet")
    assert second is first and other == "src/p=b/part-1.parquet"
