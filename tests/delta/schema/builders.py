"""Schemas to test with: builders, golden-table readers, and hypothesis strategies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from airflow_delta_provider.delta.schema.types import struct_field, struct_type


def field(name: str, t: Any, nullable: bool = True, metadata: dict | None = None) -> dict:
    return struct_field(name, t, nullable, metadata)


def struct(*fields: dict) -> dict:
    return struct_type(fields)


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
    return fields.map(lambda fs: struct_type(struct_field(*f) for f in fs))


_TYPES = st.recursive(
    _PRIMITIVES,
    lambda children: st.one_of(
        _struct_of(children),
        st.builds(array, children, st.booleans()),
        st.builds(map_, children, children, st.booleans()),
    ),
    max_leaves=8,
)


SCHEMAS = _struct_of(_TYPES)
