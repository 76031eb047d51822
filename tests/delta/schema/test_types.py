"""Tests for airflow_delta_provider.delta.schema.types.

Oracles, where one exists: the golden tables' own ``schemaString`` (written
by delta-spark), the Arrow schema ``deltalake`` (delta-rs) derives from the
same tables, the ``nullCount`` layout of delta-spark's per-file stats, and
pyspark's pure-Python ``StructType`` (no JVM) for the tree layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_delta_provider.delta.schema import types as S
from airflow_delta_provider.delta.errors import (
    InvalidInputError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)

# --- helpers -----------------------------------------------------------------


def field(name: str, t: Any, nullable: bool = True, metadata: dict | None = None) -> dict:
    return S.struct_field(name, t, nullable, metadata)


def struct(*fields: dict) -> dict:
    return S.struct_type(fields)


def array(element: Any, contains_null: bool = True) -> dict:
    return {"type": "array", "elementType": element, "containsNull": contains_null}


def map_(key: Any, value: Any, value_contains_null: bool = True) -> dict:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": value_contains_null}


def first_commit(table_dir: Path) -> list[dict]:
    text = (table_dir / "_delta_log" / "00000000000000000000.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def golden_metadata(golden_dir: Path, table: str) -> dict:
    return next(a["metaData"] for a in first_commit(golden_dir / table) if "metaData" in a)


def flatten_keys(d: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for k, v in d.items():
        out += flatten_keys(v, prefix + (k,)) if isinstance(v, dict) else [prefix + (k,)]
    return out


# Tables delta-spark wrote with every primitive and nesting shape.
GOLDEN_SCHEMA_TABLES = [
    "data-reader-primitives",
    "data-reader-nested-struct",
    "data-reader-map",
    "data-reader-array-complex-objects",
    "data-reader-array-primitives",
    "decimal-various-scale-precision",
    "parquet-decimal-type",
    "parquet-all-types",
    "data-skipping-basic-stats-all-types",
    "data-reader-timestamp_ntz",
]

# Tables whose first add carries delta-spark stats, to check leaf_fields.
GOLDEN_STATS_TABLES = [
    "parquet-all-types",
    "type-widening-nested",
    "spark-variant-checkpoint",
    "data-skipping-basic-stats-all-types",
    "data-skipping-partition-and-data-column",
    "dv-partitioned-with-checkpoint",
    "kernel-timestamp-partition-col-ISO8601",
    "basic-with-inserts-updates",
]


# --- golden tables -----------------------------------------------------------------


@pytest.mark.parametrize("table", GOLDEN_SCHEMA_TABLES)
def test_golden_schema_string_round_trips_through_arrow(golden_dir, table):
    schema_string = golden_metadata(golden_dir, table)["schemaString"]
    schema = json.loads(schema_string)

    back = S.from_arrow_schema(S.to_arrow_schema(schema))

    assert back == schema
    assert S.schema_string(back) == schema_string


@pytest.mark.parametrize("table", GOLDEN_SCHEMA_TABLES)
def test_golden_arrow_schema_matches_delta_rs(golden_dir, table):
    deltalake = pytest.importorskip("deltalake")
    try:
        theirs = pa.schema(deltalake.DeltaTable(str(golden_dir / table)).schema().to_arrow())
    except Exception as exc:  # a delta-rs limitation, not ours
        pytest.skip(f"deltalake cannot open {table}: {exc}")
    schema = json.loads(golden_metadata(golden_dir, table)["schemaString"])

    ours = S.to_arrow_schema(schema)

    assert ours.equals(theirs), f"\nours:\n{ours}\ndelta-rs:\n{theirs}"
    assert S.from_arrow_schema(theirs) == schema


@pytest.mark.parametrize("table", GOLDEN_STATS_TABLES)
def test_leaf_fields_match_delta_spark_stats_layout(golden_dir, table):
    actions = [a for p in sorted((golden_dir / table / "_delta_log").glob("*.json"))
               for a in map(json.loads, p.read_text().splitlines())]
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    stats = next(json.loads(a["add"]["stats"]) for a in actions if a.get("add", {}).get("stats"))

    leaves = S.leaf_fields(json.loads(metadata["schemaString"]), exclude=metadata["partitionColumns"])

    assert [path for path, _ in leaves] == flatten_keys(stats["nullCount"])


@pytest.mark.parametrize("table", ["parquet-all-types", "data-reader-map", "data-reader-nested-struct"])
def test_tree_string_matches_spark(golden_dir, table):
    types = pytest.importorskip("pyspark.sql.types")
    schema = json.loads(golden_metadata(golden_dir, table)["schemaString"])

    assert S.tree_string(schema) == types.StructType.fromJson(schema).treeString().rstrip("\n")


def test_schema_string_matches_spark_json_value():
    types = pytest.importorskip("pyspark.sql.types")
    schema = struct(
        field("a", struct(field("b", array(map_("string", "decimal(5,2)", False))))),
        field("c", "timestamp", False, {"comment": "x"}),
    )

    assert json.loads(S.schema_string(schema)) == types.StructType.fromJson(schema).jsonValue()


# --- Delta -> Arrow -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta_type", "arrow_type"),
    [
        ("string", pa.string()),
        ("long", pa.int64()),
        ("integer", pa.int32()),
        ("short", pa.int16()),
        ("byte", pa.int8()),
        ("float", pa.float32()),
        ("double", pa.float64()),
        ("boolean", pa.bool_()),
        ("binary", pa.binary()),
        ("date", pa.date32()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestamp_ntz", pa.timestamp("us")),
        ("decimal(10,2)", pa.decimal128(10, 2)),
        ("decimal(38,0)", pa.decimal128(38, 0)),
        ("decimal(12, 3)", pa.decimal128(12, 3)),
    ],
)
def test_primitive_to_arrow_and_back(delta_type, arrow_type):
    assert S.to_arrow_type(delta_type) == arrow_type
    assert S.from_arrow_type(arrow_type) == delta_type.replace(" ", "")


def test_nullability_is_carried_at_every_level():
    schema = struct(
        field("s", struct(field("inner", "long", nullable=False)), nullable=False),
        field("a", array("integer", contains_null=False)),
        field("m", map_("string", "double", value_contains_null=False)),
    )

    arrow = S.to_arrow_schema(schema)

    assert not arrow.field("s").nullable
    assert not arrow.field("s").type.field("inner").nullable
    assert arrow.field("a").nullable and not arrow.field("a").type.value_field.nullable
    assert not arrow.field("m").type.item_field.nullable
    assert not arrow.field("m").type.key_field.nullable  # Delta map keys are never null
    assert S.from_arrow_schema(arrow) == schema


def test_field_metadata_survives_arrow():
    meta = {
        "comment": "123",  # a string that looks like a number stays a string
        "delta.invariants": '{"expression":{"expression":"x > 3"}}',
        "delta.columnMapping.id": 7,
        "flags": [True, None],
    }
    schema = struct(field("x", "integer", metadata=meta))

    arrow = S.to_arrow_schema(schema)

    assert arrow.field("x").metadata
    assert S.from_arrow_schema(arrow) == schema
    assert S.to_arrow_schema(schema, metadata=False).field("x").metadata is None


@pytest.mark.parametrize("bad", ["void", "interval", "char(3)"])
def test_unsupported_delta_type_names_type_and_column(bad):
    with pytest.raises(UnsupportedFeatureError, match=bad.replace("(", r"\(").replace(")", r"\)")):
        S.to_arrow_type(bad)
    with pytest.raises(UnsupportedFeatureError, match="col_x"):
        S.to_arrow_schema(struct(field("ok", "long"), field("col_x", array(bad))))


@pytest.mark.parametrize("bad", ["decimal(39,0)", "decimal(5,6)", "decimal(0,0)", "decimal(a,b)"])
def test_invalid_decimals_are_refused(bad):
    with pytest.raises(InvalidInputError, match="decimal"):
        S.to_arrow_type(bad)


def test_parse_decimal():
    assert S.parse_decimal("decimal(10,2)") == (10, 2)
    assert S.parse_decimal("decimal( 7 , 0 )") == (7, 0)
    assert S.parse_decimal("decimal") == (10, 0)


# --- Arrow -> Delta -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrow_type", "delta_type"),
    [
        (pa.large_string(), "string"),
        (pa.string_view(), "string"),
        (pa.large_binary(), "binary"),
        (pa.binary(16), "binary"),
        (pa.dictionary(pa.int32(), pa.string()), "string"),
        (pa.dictionary(pa.int8(), pa.int64()), "long"),
        (pa.date64(), "date"),
        (pa.float16(), "float"),
        (pa.uint8(), "short"),
        (pa.uint16(), "integer"),
        (pa.uint32(), "long"),
        (pa.uint64(), "decimal(20,0)"),
        (pa.decimal256(20, 4), "decimal(20,4)"),
        (pa.null(), "void"),
        (pa.timestamp("s", tz="America/New_York"), "timestamp"),
        (pa.timestamp("ns", tz="UTC"), "timestamp"),
        (pa.timestamp("ms"), "timestamp_ntz"),
        (pa.timestamp("ns"), "timestamp_ntz"),
        (pa.large_list(pa.int32()), array("integer")),
        (pa.list_(pa.field("x", pa.int32(), nullable=False), 3), array("integer", False)),
    ],
)
def test_arrow_types_without_exact_delta_match(arrow_type, delta_type):
    assert S.from_arrow_type(arrow_type) == delta_type


@pytest.mark.parametrize(
    "arrow_type", [pa.time64("us"), pa.duration("s"), pa.month_day_nano_interval(), pa.decimal256(40, 2)]
)
def test_arrow_types_with_no_delta_type_name_the_column(arrow_type):
    with pytest.raises(InvalidInputError, match="when"):
        S.from_arrow_schema(pa.schema([pa.field("id", pa.int64()), pa.field("when", arrow_type)]))


def test_from_arrow_keeps_only_delta_metadata():
    arrow = pa.schema([pa.field("a", pa.int32(), metadata={"PARQUET:field_id": "1", "comment": '"hi"',
                                                            "junk": "not json"})])

    assert S.from_arrow_schema(arrow)["fields"][0]["metadata"] == {"comment": "hi"}
    assert S.from_arrow_schema(arrow, metadata=False)["fields"][0]["metadata"] == {}


# --- serialization ------------------------------------------------------------------------


def test_schema_string_uses_delta_spark_key_order_and_is_compact():
    scrambled = {
        "fields": [
            {"metadata": {}, "nullable": False, "type": "long", "name": "id"},
            {"type": {"valueContainsNull": True, "valueType": "string", "keyType": "string", "type": "map"},
             "name": "tags", "nullable": True, "metadata": {}},
        ],
        "type": "struct",
    }

    text = S.schema_string(scrambled)

    assert text == (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},'
        '{"name":"tags","type":{"type":"map","keyType":"string","valueType":"string",'
        '"valueContainsNull":true},"nullable":true,"metadata":{}}]}'
    )
    assert json.loads(text) == scrambled


def test_tree_string_layout():
    schema = struct(field("id", "long", False), field("xs", array(struct(field("v", "decimal(3,1)")))))

    assert S.tree_string(schema).splitlines() == [
        "root",
        " |-- id: long (nullable = false)",
        " |-- xs: array (nullable = true)",
        " |    |-- element: struct (containsNull = true)",
        " |    |    |-- v: decimal(3,1) (nullable = true)",
    ]


# --- lookup -------------------------------------------------------------------------------


def test_field_by_name_and_column_names():
    schema = struct(field("Id", "long"), field("name", "string"), field("id", "integer"))

    assert S.column_names(schema) == ["Id", "name", "id"]
    assert S.field_by_name(schema, "id")["type"] == "integer"  # exact match wins
    assert S.field_by_name(schema, "NAME")["name"] == "name"
    assert S.field_by_name(schema, "NAME", case_insensitive=False) is None
    assert S.field_by_name(schema, "missing") is None


def test_leaf_fields_order_limit_and_exclusions():
    schema = struct(
        field("p", "string"),
        field("a", struct(field("b", "long"), field("c", struct(field("d", "date"))))),
        field("arr", array(struct(field("x", "long")))),
        field("nothing", "void"),
        field("m", map_("string", "long")),
        field("z", "double"),
    )

    all_leaves = S.leaf_fields(schema, limit=None, exclude=["P"])

    assert [p for p, _ in all_leaves] == [("a", "b"), ("a", "c", "d"), ("arr",), ("m",), ("z",)]
    assert all_leaves[2][1] == array(struct(field("x", "long")))
    assert S.leaf_fields(schema, limit=2, exclude=["p"]) == all_leaves[:2]
    assert S.leaf_fields(schema, limit=-1, exclude=["p"]) == all_leaves
    assert S.leaf_fields(schema, limit=1)[0] == (("p",), "string")
    assert S.leaf_fields(schema, limit=0) == []


# --- column names -------------------------------------------------------------------------


def test_valid_names_pass():
    nested = struct(field("a_b", "long"))
    S.check_column_names(struct(field("a_b", "long"), field("Ünïcode-ok.dot", nested)))


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (struct(field("id", "long"), field("ID", "long")), "ID"),
        (struct(field("s", struct(field("x", "long"), field("X", "long")))), "s.X"),
        (struct(field("a", array(struct(field("k", "long"), field("K", "int"))))), "a.element.K"),
        (struct(field("m", map_("string", struct(field("v", "long"), field("V", "long"))))), "m.value.V"),
    ],
)
def test_duplicate_names_are_refused(schema, named):
    with pytest.raises(InvalidInputError, match="duplicate") as err:
        S.check_column_names(schema)
    assert named in str(err.value)


@pytest.mark.parametrize("char", list(" ,;{}()\n\t="))
def test_invalid_characters_are_refused(char):
    with pytest.raises(InvalidInputError, match="invalid column name") as err:
        S.check_column_names(struct(field("ok", struct(field(f"bad{char}name", "long")))))
    assert "ok.`bad" in str(err.value) or "ok.bad" in str(err.value)


# --- enforcement --------------------------------------------------------------------------

TABLE = struct(
    field("id", "long", nullable=False),
    field("name", "string"),
    field("info", struct(field("city", "string"), field("zip", "integer"))),
    field("tags", array(struct(field("k", "string"), field("v", "double")))),
    field("attrs", map_("string", "decimal(10,2)")),
)


def test_enforce_accepts_the_same_schema_and_ignores_nullability():
    S.enforce_schema(TABLE, TABLE)
    S.enforce_schema(TABLE, S.as_nullable(TABLE))  # nullable data into NOT NULL is a row check
    relaxed = struct(field("id", "long"), field("name", "string", nullable=False))
    S.enforce_schema(struct(field("id", "long", False), field("name", "string")), relaxed)


def test_enforce_accepts_missing_nullable_columns_at_any_depth():
    data = struct(
        field("id", "long"),
        field("info", struct(field("zip", "integer"))),
        field("tags", array(struct(field("k", "string")))),
    )
    S.enforce_schema(TABLE, data)


def _mismatch(table: dict, data: dict, check=S.enforce_schema) -> str:
    with pytest.raises(SchemaMismatchError) as err:
        check(table, data)
    message = str(err.value)
    assert S.tree_string(table) in message and S.tree_string(data) in message
    return message


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (struct(field("id", "long"), field("extra", "string")), "extra"),
        (struct(field("id", "long"), field("info", struct(field("planet", "string")))), "info.planet"),
        (struct(field("id", "long"), field("tags", array(struct(field("w", "long"))))), "tags.element.w"),
        (struct(field("ID", "long")), "ID"),
        (struct(field("id", "long"), field("info", struct(field("City", "string")))), "info.City"),
        (struct(field("id", "integer")), "id"),
        (struct(field("id", "long"), field("info", "string")), "info"),
        (struct(field("id", "long"), field("info", struct(field("zip", "long")))), "info.zip"),
        (struct(field("id", "long"), field("tags", array("string"))), "tags.element"),
        (struct(field("id", "long"), field("tags", array(struct(field("v", "float"))))), "tags.element.v"),
        (struct(field("id", "long"), field("attrs", map_("string", "decimal(10,3)"))), "attrs.value"),
        (struct(field("id", "long"), field("attrs", map_("long", "decimal(10,2)"))), "attrs.key"),
        (struct(field("name", "string")), "id"),  # NOT NULL column left out
        (struct(field("id", "timestamp_ntz")), "id"),
    ],
)
def test_enforce_refuses_with_both_trees_and_the_column(data, named):
    message = _mismatch(TABLE, data)
    assert f"column {named}:" in message


def test_enforce_reports_every_difference():
    data = struct(field("id", "string"), field("x", "long"), field("y", "long"))
    message = _mismatch(TABLE, data)
    assert all(f"column {c}:" in message for c in ("id", "x", "y"))


def test_enforce_refuses_duplicate_data_columns():
    with pytest.raises(InvalidInputError, match="duplicate"):
        S.enforce_schema(TABLE, struct(field("id", "long"), field("Id", "long")))


def test_enforce_refuses_missing_nested_not_null_field():
    table = struct(field("s", struct(field("must", "long", nullable=False), field("may", "long"))))
    assert "column s.must:" in _mismatch(table, struct(field("s", struct(field("may", "long")))))


# --- merge --------------------------------------------------------------------------------


def test_merge_appends_new_fields_at_the_end_as_nullable():
    data = struct(
        field("new_top", struct(field("q", "long", nullable=False)), nullable=False),
        field("info", struct(field("country", "string", nullable=False), field("city", "string"))),
        field("id", "long"),
    )

    merged = S.merge_schemas(TABLE, data)

    assert S.column_names(merged) == S.column_names(TABLE) + ["new_top"]
    info = S.field_by_name(merged, "info")["type"]
    assert S.column_names(info) == ["city", "zip", "country"]
    assert S.field_by_name(info, "country")["nullable"] is True
    new_top = S.field_by_name(merged, "new_top")
    assert new_top["nullable"] and new_top["type"]["fields"][0]["nullable"]


def test_merge_keeps_table_name_nullability_and_metadata():
    table = struct(field("Id", "long", nullable=False, metadata={"comment": "key"}))
    data = struct(field("ID", "long", nullable=True, metadata={"comment": "other"}), field("x", "long"))

    merged = S.merge_schemas(table, data)

    assert merged["fields"][0] == table["fields"][0]
    assert merged["fields"][1] == field("x", "long")


def test_merge_of_identical_schemas_is_identity():
    assert S.merge_schemas(TABLE, TABLE) == TABLE


def test_merge_arrays_and_maps_element_wise_keeping_table_null_flags():
    table = struct(
        field("a", array(struct(field("x", "long")), contains_null=False)),
        field("m", map_("string", struct(field("x", "long")), value_contains_null=False)),
    )
    data = struct(
        field("a", array(struct(field("x", "long"), field("y", "string")))),
        field("m", map_("string", struct(field("y", "date")))),
    )

    merged = S.merge_schemas(table, data)

    a, m = merged["fields"][0]["type"], merged["fields"][1]["type"]
    assert a["containsNull"] is False and S.column_names(a["elementType"]) == ["x", "y"]
    assert m["valueContainsNull"] is False and S.column_names(m["valueType"]) == ["x", "y"]


@pytest.mark.parametrize(
    ("table_type", "data_type", "merged"),
    [
        ("byte", "short", "short"),
        ("byte", "integer", "integer"),
        ("short", "integer", "integer"),
        ("integer", "byte", "integer"),
        ("short", "byte", "short"),
        ("integer", "short", "integer"),
        ("void", "long", "long"),
        ("decimal(5,1)", "void", "decimal(5,1)"),
        ("void", array(struct(field("x", "long", False)), False), array(struct(field("x", "long")))),
    ],
)
def test_merge_widens_integrals_and_fills_void(table_type, data_type, merged):
    result = S.merge_schemas(struct(field("c", table_type)), struct(field("c", data_type)))
    assert result == struct(field("c", merged))


@pytest.mark.parametrize(
    ("table_type", "data_type"),
    [
        ("integer", "long"),
        ("long", "integer"),
        ("float", "double"),
        ("string", "integer"),
        ("timestamp", "timestamp_ntz"),
        ("decimal(10,2)", "decimal(12,2)"),
        ("decimal(10,2)", "decimal(10,3)"),
        ("decimal(10,2)", "integer"),
        (struct(field("x", "long")), "long"),
        (array("long"), map_("long", "long")),
    ],
)
def test_merge_refuses_other_type_changes(table_type, data_type):
    table = struct(field("id", "long"), field("s", struct(field("deep", table_type))))
    data = struct(field("s", struct(field("deep", data_type))))
    message = _mismatch(table, data, check=S.merge_schemas)
    assert "column s.deep:" in message


def test_merge_decimal_message_says_what_changed():
    message = _mismatch(struct(field("d", "decimal(10,2)")), struct(field("d", "decimal(12,4)")),
                        check=S.merge_schemas)
    assert "decimal(10,2)" in message and "decimal(12,4)" in message


def test_merge_refuses_missing_not_null_column():
    table = struct(field("id", "long", nullable=False), field("v", "long"))
    assert "column id:" in _mismatch(table, struct(field("v", "long")), check=S.merge_schemas)


def test_merge_refuses_bad_new_names():
    with pytest.raises(InvalidInputError, match="duplicate"):
        S.merge_schemas(TABLE, struct(field("id", "long"), field("new", "long"), field("NEW", "long")))
    with pytest.raises(InvalidInputError, match="new col"):
        S.merge_schemas(TABLE, struct(field("id", "long"), field("new col", "long")))


def test_merged_schema_accepts_the_data_it_was_merged_with():
    data = struct(field("id", "long"), field("info", struct(field("zip", "integer"), field("geo", "string"))))
    merged = S.merge_schemas(TABLE, data)
    S.enforce_schema(merged, data)
    with pytest.raises(SchemaMismatchError):
        S.enforce_schema(TABLE, data)


# --- properties -----------------------------------------------------------------------------

_PRIMITIVES = st.sampled_from(
    ["string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary", "date",
     "timestamp", "timestamp_ntz"]
) | st.builds(lambda p, s: f"decimal({p},{min(s, p)})", st.integers(1, 38), st.integers(0, 38))

_NAMES = st.text(alphabet="abcdefghijXYZ_0123456789.-é", min_size=1, max_size=6)
_METADATA = st.dictionaries(st.sampled_from(["comment", "delta.x", "k"]),
                            st.one_of(st.text(max_size=5), st.integers(), st.booleans()), max_size=2)


def _struct_of(children):
    fields = st.lists(st.tuples(_NAMES, children, st.booleans(), _METADATA), min_size=1, max_size=4,
                      unique_by=lambda f: f[0].lower())
    return fields.map(lambda fs: S.struct_type(S.struct_field(*f) for f in fs))


_TYPES = st.recursive(
    _PRIMITIVES,
    lambda children: st.one_of(
        _struct_of(children),
        st.builds(array, children, st.booleans()),
        st.builds(map_, children, children, st.booleans()),
    ),
    max_leaves=8,
)
_SCHEMAS = _struct_of(_TYPES)


@settings(max_examples=150, deadline=None)
@given(_SCHEMAS)
def test_property_arrow_round_trip_is_lossless(schema):
    assert S.from_arrow_schema(S.to_arrow_schema(schema)) == schema
    assert json.loads(S.schema_string(schema)) == schema


@settings(max_examples=100, deadline=None)
@given(_SCHEMAS)
def test_property_a_schema_fits_and_merges_with_itself(schema):
    S.enforce_schema(schema, schema)
    assert S.merge_schemas(schema, schema) == schema
