"""VARIANT end to end: APPEND, scans, UPDATE and DELETE in both I/O modes,
read back by deltalake (delta-rs) and DuckDB (delta-kernel-rs).

A variant column is written unshredded, as PROTOCOL.md asks of a table
without ``variantShredding``: a struct of the binary-encoded ``value`` and
``metadata``, with no statistics. Spark compares as ``to_json`` of the
variant; delta-rs reads the raw struct (compared byte for byte with Spark's
``VariantVal``); DuckDB reads the values (compared as JSON). A table gets the
``variantType`` reader and writer feature the moment such a column arrives,
and a table on the preview feature keeps it.
"""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError
from airflow_delta_provider.delta.partitions import decode_path
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.append import run_append
from airflow_delta_provider.spark.commands.delete import run_delete
from airflow_delta_provider.spark.commands.update import run_update
from airflow_delta_provider.spark.read.scan import scan

from ..arrow_support import arrow_workers, commit_shape  # noqa: F401 - the fixture
from .dml_support import commit_actions, state

pytestmark = pytest.mark.usefixtures("arrow_workers")

#: The protocol a reader-1/writer-2 table moves to, as delta-spark upgrades it.
UPGRADED = Protocol(3, 7, ("variantType",), ("appendOnly", "invariants", "variantType"))
#: Rows with a variant at the top level (objects, an array, a scalar, JSON
#: null and SQL null) and one in a struct.
ROWS_SQL = """
select id,
       case when id = 4 then null
            when id = 5 then parse_json('null')
            when id = 3 then parse_json('[1, "two", {"three": 3.5}]')
            else parse_json(format_string('{"a": %d, "b": "x%d", "c": {"d": [%d, true]}}', id, id, id)) end as v,
       named_struct('n', id, 'w', case when id % 2 = 0 then parse_json(format_string('"s%d"', id)) end) as s
from range(6)
"""


def _source(spark, tmp_path, sql: str = ROWS_SQL, name: str = "src") -> str:
    folder = str(tmp_path / name)
    spark.sql(sql).write.parquet(folder)
    return folder


def _variant_table(spark, tmp_path, io: str, name: str = "t") -> str:
    path = str(tmp_path / name)
    run_append(spark, path, _source(spark, tmp_path, name=f"{name}-src"), "parquet", io=io)
    return path


def _spark_json(spark, path: str, io: str = "hadoop") -> dict[int, tuple]:
    """id -> (to_json(v), to_json(s.w), s.n) through our scan."""
    df = scan(spark, DeltaTable(path).snapshot(), io=io)
    rows = df.select("id", F.to_json("v"), F.to_json("s.w"), "s.n").collect()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _duckdb_json(duckdb_delta, path: str) -> dict[int, tuple]:
    rows = duckdb_delta.execute(f"SELECT id, v::JSON, s.w::JSON, s.n FROM delta_scan('{path}')").fetchall()
    return {r[0]: r[1:] for r in rows}


def _same_json(a: dict[int, tuple], b: dict[int, tuple]) -> bool:
    """Same rows, JSON compared parsed. DuckDB reads a SQL NULL variant as
    JSON ``null``, so the two compare equal here (delta-rs tells them apart)."""

    def parse(row: tuple) -> tuple:
        return tuple(json.loads(x) if isinstance(x, str) else x for x in row)

    return a.keys() == b.keys() and all(parse(a[k]) == parse(b[k]) for k in a)


def _expected_json(spark) -> dict[int, tuple]:
    rows = spark.sql(ROWS_SQL).select("id", F.to_json("v"), F.to_json("s.w"), "s.n").collect()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


# --- APPEND and scans ------------------------------------------------------------


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_append_of_variant_columns_reads_back_the_same_everywhere(spark, tmp_path, duckdb_delta, io):
    path = _variant_table(spark, tmp_path, io)
    snap = DeltaTable(path).snapshot()
    assert snap.protocol == UPGRADED
    assert [f["type"] for f in snap.schema["fields"]][:2] == ["long", "variant"]
    assert snap.schema["fields"][2]["type"]["fields"][1]["type"] == "variant"

    expected = _expected_json(spark)
    assert expected[4][0] is None and expected[5][0] == "null"  # SQL null and JSON null stay apart
    for scan_io in ("hadoop", "arrow"):
        assert _spark_json(spark, path, scan_io) == expected, scan_io
    assert _same_json(_duckdb_json(duckdb_delta, path), expected)

    # delta-rs reads each variant's two binary parts exactly as Spark holds
    # them, a SQL NULL (id 4) as null and a JSON null (id 5) as its bytes.
    from deltalake import DeltaTable as RsTable

    ours = {r["id"]: r["v"] for r in scan(spark, snap, io=io).select("id", "v").collect()}
    theirs = {r["id"]: r["v"] for r in RsTable(path).to_pyarrow_table().to_pylist()}
    assert theirs.keys() == ours.keys()
    for key, value in ours.items():
        got = theirs[key]
        assert (got is None) == (value is None), key
        if value is not None:
            assert (got["value"], got["metadata"]) == (bytes(value.value), bytes(value.metadata)), key


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_variant_files_are_unshredded_structs_of_binary_without_stats(spark, tmp_path, io):
    path = _variant_table(spark, tmp_path, io)
    for add in DeltaTable(path).snapshot().files:
        parquet = pq.ParquetFile(os.path.join(path, decode_path(add.path))).schema
        columns = {parquet.column(i).path for i in range(len(parquet))}
        assert columns == {"id", "v.value", "v.metadata", "s.n", "s.w.value", "s.w.metadata"}  # no typed_value
        assert "Variant" not in str(parquet)  # no Parquet VARIANT annotation, as delta-spark writes
        stats = json.loads(add.stats)
        # Stats for id and s.n; none for the variants, at any depth.
        assert stats["nullCount"] == {"id": 0, "s": {"n": 0}}
        assert stats["minValues"].keys() == stats["maxValues"].keys() == {"id", "s"}


def test_both_io_modes_write_the_same_table(spark, tmp_path):
    hadoop = _variant_table(spark, tmp_path, "hadoop", "h")
    arrow = _variant_table(spark, tmp_path, "arrow", "a")
    assert commit_shape(hadoop, 0) == commit_shape(arrow, 0)


# --- The protocol upgrade ------------------------------------------------------------


def _protocol_actions(path: str, version: int) -> list[dict]:
    return [a["protocol"] for a in commit_actions(path, version) if "protocol" in a]


def test_protocol_is_upgraded_when_a_variant_column_arrives_and_not_before(spark, tmp_path, duckdb_delta):
    path = str(tmp_path / "t")
    plain = _source(spark, tmp_path, "select id from range(2)", "plain")
    run_append(spark, path, plain, "parquet")
    assert DeltaTable(path).snapshot().protocol == Protocol(1, 2)

    # Without merge_schema the new column is refused, and nothing changes.
    src = _source(spark, tmp_path, "select 7L as id, parse_json('{\"k\": [1]}') as extra", "with-variant")
    before = state(path)
    with pytest.raises(SchemaMismatchError, match="extra"):
        run_append(spark, path, src, "parquet")
    assert state(path) == before

    result = run_append(spark, path, src, "parquet", merge_schema=True)
    assert _protocol_actions(path, result.version) == [UPGRADED.to_json()]
    snap = DeltaTable(path).snapshot()
    assert snap.protocol == UPGRADED and snap.schema["fields"][-1]["type"] == "variant"
    by_duckdb = duckdb_delta.execute(f"SELECT id, extra::JSON FROM delta_scan('{path}') ORDER BY id").fetchall()
    assert [(i, json.loads(x)) for i, x in by_duckdb] == [(0, None), (1, None), (7, {"k": [1]})]
    # Later appends keep the protocol and write none.
    again = run_append(spark, path, src, "parquet")
    assert _protocol_actions(path, again.version) == []


# --- UPDATE and DELETE -------------------------------------------------------------------


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_update_and_delete_by_other_columns_and_by_variant_paths(spark, tmp_path, duckdb_delta, io):
    path = _variant_table(spark, tmp_path, io)
    expected = _expected_json(spark)

    # A condition on another column; the variant is copied through unchanged.
    by_id = run_update(spark, path, "id = 1", {"s": "named_struct('n', 10L, 'w', parse_json('[10]'))"}, io=io)
    assert by_id.metrics["numUpdatedRows"] == 1
    expected[1] = (expected[1][0], "[10]", 10)

    # A condition on a path inside the variant (rows 3 to 5 have no $.a: null, not a match).
    cast = "variant_get(v, '$.a', 'int')"
    by_path = run_update(spark, path, f"{cast} >= 2", {"v": f"parse_json(to_json(named_struct('a', {cast} * 100)))"}, io=io)
    assert by_path.metrics["numUpdatedRows"] == 1
    expected[2] = ('{"a":200}', *expected[2][1:])

    deleted = run_delete(spark, path, f"{cast} = 0 OR variant_get(v, '$[1]', 'string') = 'two' OR v IS NULL", io=io)
    assert deleted.metrics["numDeletedRows"] == 3  # ids 0, 3 and 4 (SQL null); 5's JSON null stays
    for gone in (0, 3, 4):
        del expected[gone]

    assert _spark_json(spark, path, io) == expected
    assert _same_json(_duckdb_json(duckdb_delta, path), expected)
    assert DeltaTable(path).snapshot().protocol == UPGRADED


@pytest.mark.parametrize(
    "properties",
    [{"delta.columnMapping.mode": "id"}, {"delta.columnMapping.mode": "name"}, {"delta.enableDeletionVectors": "true"}],
    ids=["mapping-id", "mapping-name", "deletion-vectors"],
)
def test_rewrites_keep_variants_under_column_mapping_and_with_deletion_vectors(spark, tmp_path, duckdb_delta, properties):
    """A rewrite must keep the variant's parquet field id (readers of an
    ``id``-mode table find columns by it), and vectors hide the right rows."""
    path = str(tmp_path / "t")
    run_append(spark, path, _source(spark, tmp_path), "parquet", io="hadoop", table_properties=properties)
    expected = _expected_json(spark)
    run_delete(spark, path, "variant_get(v, '$.a', 'int') = 1", io="hadoop")
    run_update(spark, path, "id = 2", {"v": "parse_json('7')"}, io="hadoop")
    del expected[1]
    expected[2] = ("7", *expected[2][1:])
    assert _spark_json(spark, path) == expected
    assert _same_json(_duckdb_json(duckdb_delta, path), expected)


def test_the_two_io_modes_commit_the_same_update(spark, tmp_path):
    hadoop = _variant_table(spark, tmp_path, "hadoop", "h")
    arrow = _variant_table(spark, tmp_path, "arrow", "a")
    condition, change = "variant_get(v, '$.c.d[0]', 'long') < 2", {"v": "parse_json('{\"z\": true}')"}
    run_update(spark, hadoop, condition, change, io="hadoop")
    run_update(spark, arrow, condition, change, io="arrow")
    assert commit_shape(hadoop, 1)["adds"] == commit_shape(arrow, 1)["adds"]
    assert commit_shape(hadoop, 1)["metrics"] == commit_shape(arrow, 1)["metrics"]


# --- delta-spark's table ---------------------------------------------------------------------


def _golden_expected(ids: list[int]) -> list[tuple]:
    """Every column's JSON as the golden table's generator (info.txt) wrote
    it; Spark's ``to_json`` leaves out a struct's null fields (``{}``)."""
    out = []
    for i in ids:
        one = {"key": i}
        out.append((i, one, [one, None, one, None, one], {"v": one}, {str(i): one, "nullKey": None},
                    [{"v": one}, {}, None, {"v": one}, None, {"v": one}], {"v": [None, one]}))
    return sorted(out, key=repr)


def _golden_rows(spark, path: str, io: str) -> list[tuple]:
    df = scan(spark, DeltaTable(path).snapshot(), io=io)
    columns = [c for c in df.columns if c != "id"]
    rows = df.select("id", *[F.to_json(c).alias(c) for c in columns]).collect()
    return sorted(((r["id"], *(json.loads(r[c]) for c in columns)) for r in rows), key=repr)


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_golden_variant_table_scans_as_its_generator_wrote_it(spark, golden_copy, io):
    assert _golden_rows(spark, golden_copy("spark-variant-checkpoint"), io) == _golden_expected([*range(100), 0, 1])


@pytest.mark.parametrize("io", ["hadoop", "arrow"])
def test_update_on_a_preview_table_keeps_its_protocol_and_every_nested_variant(spark, golden_copy, duckdb_delta, io):
    """The rewrite copies variants in arrays, maps and structs, null ones
    among them, and the table keeps ``variantType-preview``."""
    path = golden_copy("spark-variant-checkpoint")
    preview = DeltaTable(path).snapshot().protocol
    result = run_update(spark, path, "variant_get(v, '$.key', 'int') = 7", {"v": "parse_json('{\"key\": 700}')"}, io=io)
    assert result.metrics["numUpdatedRows"] == 1
    assert _protocol_actions(path, result.version) == []
    assert DeltaTable(path).snapshot().protocol == preview
    expected = _golden_expected([*range(100), 0, 1])
    at = next(i for i, row in enumerate(expected) if row[0] == 7)
    expected[at] = (7, {"key": 700}, *expected[at][2:])
    assert _golden_rows(spark, path, io) == sorted(expected, key=repr)
    assert duckdb_delta.execute(f"SELECT v::JSON FROM delta_scan('{path}') WHERE id = 7").fetchall() == [
        ('{"key":700}',)
    ]


# --- Bad input -------------------------------------------------------------------------


def test_bad_variant_input_changes_nothing(spark, tmp_path):
    path = _variant_table(spark, tmp_path, "hadoop")
    before = state(path)
    # A variant cannot partition a table (it is not comparable).
    with pytest.raises(InvalidInputError, match="partition column 'v' is a variant"):
        run_append(spark, str(tmp_path / "new"), _source(spark, tmp_path, name="again"), "parquet", partition_by=["v"])
    assert not os.path.exists(tmp_path / "new" / "_delta_log")
    # A string where the table has a variant is a schema mismatch.
    text = _source(spark, tmp_path, "select 9L as id, '{\"a\": 1}' as v", "text")
    with pytest.raises(SchemaMismatchError, match="column v: type string in the data, variant in the table"):
        run_append(spark, path, text, "parquet")
    # A condition on a variant that does not analyse.
    with pytest.raises(InvalidInputError):
        run_delete(spark, path, "variant_get(v, '$.a', 'no_such_type') = 1")
    assert state(path) == before


def test_an_arrow_read_of_a_variant_parquet_source_on_a_store_is_refused(spark, tmp_path, s3_bucket, monkeypatch):
    """pyarrow would read Spark's variant as a plain struct: refused before
    anything is written, naming the column and io=hadoop."""
    from tests.storage_servers import upload_tree

    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    upload_tree(_source(spark, tmp_path), s3_bucket.uri("src"))
    target = s3_bucket.uri("t")
    with pytest.raises(InvalidInputError, match=r"variant column\(s\) v, s.*use io=hadoop"):
        run_append(spark, target, s3_bucket.uri("src"), "parquet", io="arrow")
    assert not DeltaTable(target).exists()
