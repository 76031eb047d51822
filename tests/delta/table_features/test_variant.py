"""The ``variant`` type in the core: its Arrow form, the schema rules, the
``variantType`` table feature and file skipping.

The oracle is delta-spark's golden table ``spark-variant-checkpoint``: its
data files (a variant at the top level and in arrays, structs and maps), its
protocol (``variantType-preview``) and its per-file stats (which hold a
``nullCount`` for every variant column, one this implementation never uses).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import SchemaMismatchError, UnsupportedFeatureError
from airflow_delta_provider.delta.schema.arrow import to_arrow_schema, to_arrow_type
from airflow_delta_provider.delta.schema.evolution import enforce_schema, merge_schemas
from airflow_delta_provider.delta.schema.types import struct_field, struct_type
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.gate import (
    check_readable,
    check_writable,
    protocol_for,
    required_features,
)

GOLDEN = "spark-variant-checkpoint"
#: The protocol a reader-1/writer-2 table moves to, as delta-spark upgrades it.
UPGRADED = Protocol(3, 7, ("variantType",), ("appendOnly", "invariants", "variantType"))
PREVIEW = Protocol(3, 7, ("variantType-preview",), ("appendOnly", "invariants", "variantType-preview"))


def _field(name: str, t, nullable: bool = True) -> dict:
    return struct_field(name, t, nullable)


def _schema(*fields: dict) -> dict:
    return struct_type(fields)


def _metadata(schema: dict, configuration: dict | None = None) -> Metadata:
    return Metadata.new(json.dumps(schema), [], configuration or {}, created_time=0)


# --- Arrow ------------------------------------------------------------------------


def test_arrow_form_is_what_pyarrow_reads_from_delta_spark_files(golden_dir: Path) -> None:
    """Every column of the golden files, variants at any depth, has the Arrow
    type the core maps its Delta type to (so scans need no conversion)."""
    snap = DeltaTable(str(golden_dir / GOLDEN)).snapshot()
    ours = to_arrow_schema(snap.schema, metadata=False)
    for add in snap.files:
        theirs = pq.ParquetFile(str(golden_dir / GOLDEN / add.path)).schema_arrow
        for field in ours:
            assert theirs.field(field.name).type.equals(field.type), field.name
    assert to_arrow_type("variant") == pa.struct(
        [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
    )


# --- Schema rules -------------------------------------------------------------------


TABLE = _schema(_field("id", "long"), _field("v", "variant"), _field("s", _schema(_field("w", "variant"))))


def test_enforcement_accepts_variant_and_refuses_its_physical_struct() -> None:
    enforce_schema(TABLE, _schema(_field("id", "long"), _field("v", "variant")))
    physical = _schema(_field("value", "binary", False), _field("metadata", "binary", False))
    with pytest.raises(SchemaMismatchError, match=r"column v: type struct<value:binary,metadata:binary> in the data, variant"):
        enforce_schema(TABLE, _schema(_field("v", physical)))
    with pytest.raises(SchemaMismatchError, match=r"column s\.w: type string in the data, variant in the table"):
        enforce_schema(TABLE, _schema(_field("s", _schema(_field("w", "string")))))


def test_merge_adds_variant_columns_and_refuses_type_changes() -> None:
    merged = merge_schemas(TABLE, _schema(_field("extra", "variant", False), _field("s", _schema(_field("x", "variant")))))
    assert merged["fields"][-1] == _field("extra", "variant")  # appended, made nullable
    assert [f["name"] for f in merged["fields"][2]["type"]["fields"]] == ["w", "x"]
    assert merge_schemas(_schema(_field("v", "void")), _schema(_field("v", "variant")))["fields"][0]["type"] == "variant"
    with pytest.raises(SchemaMismatchError, match="cannot merge type string in the data into variant"):
        merge_schemas(TABLE, _schema(_field("v", "string")))


# --- The table feature ----------------------------------------------------------------


@pytest.mark.parametrize(
    "delta_type",
    [
        "variant",
        _schema(_field("w", "variant")),
        {"type": "array", "elementType": "variant", "containsNull": True},
        {"type": "map", "keyType": "string", "valueType": "variant", "valueContainsNull": True},
    ],
    ids=["column", "struct-field", "array-element", "map-value"],
)
def test_a_variant_column_anywhere_upgrades_the_protocol_as_delta_spark_does(delta_type) -> None:
    md = _metadata(_schema(_field("id", "long"), _field("c", delta_type)))
    assert required_features(md) == {"variantType"}
    upgraded = protocol_for(Protocol(1, 2), md)
    assert upgraded == UPGRADED
    assert protocol_for(upgraded, md) is upgraded
    check_writable(upgraded, md)


def test_a_table_on_the_preview_feature_keeps_it() -> None:
    """delta-spark adds ``variantType`` only when ``variantType-preview`` is not there."""
    md = _metadata(TABLE)
    assert required_features(md, PREVIEW) == set()
    assert protocol_for(PREVIEW, md) is PREVIEW
    check_writable(PREVIEW, md)
    # Another feature arriving keeps the preview name and adds no second one.
    with_dvs = protocol_for(PREVIEW, _metadata(TABLE, {"delta.enableDeletionVectors": "true"}))
    assert with_dvs == Protocol(
        3, 7, ("deletionVectors", "variantType-preview"),
        ("appendOnly", "deletionVectors", "invariants", "variantType-preview"),
    )


def test_no_variant_column_no_upgrade() -> None:
    before = Protocol(1, 2)
    assert protocol_for(before, _metadata(_schema(_field("s", _schema(_field("value", "binary")))))) is before


def test_variant_shredding_is_still_refused() -> None:
    shredded = Protocol(3, 7, ("variantShredding", "variantType"), ("variantShredding", "variantType"))
    with pytest.raises(UnsupportedFeatureError, match="variantShredding"):
        check_readable(shredded)


# --- Skipping ---------------------------------------------------------------------------


def test_skipping_never_uses_variant_stats(golden_dir: Path) -> None:
    """delta-spark logged ``nullCount.v = 0`` for every file: used, it would
    drop them all for ``v IS NULL``. Stats of other columns still prune."""
    snap = DeltaTable(str(golden_dir / GOLDEN)).snapshot()
    assert all(json.loads(f.stats)["nullCount"]["v"] == 0 for f in snap.files)
    assert snap.files_matching("v IS NULL") == snap.files
    assert snap.files_matching("v IS NULL AND id = 1") == [
        f for f in snap.files if json.loads(f.stats)["minValues"]["id"] <= 1 <= json.loads(f.stats)["maxValues"]["id"]
    ]
    assert len(snap.files_matching("id > 99")) == 0


def test_a_variant_column_at_any_depth_uses_the_feature():
    from airflow_delta_provider.delta.table_features.variant import is_used

    nested = struct_type([struct_field("v", {"type": "array", "elementType": "variant", "containsNull": True})])
    assert is_used(Metadata.new(json.dumps(struct_type([struct_field("s", nested)])), (), {}, created_time=0))
    assert not is_used(Metadata.new(json.dumps(struct_type([struct_field("s", "string")])), (), {}, created_time=0))
