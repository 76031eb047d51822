"""Unit tests for ``delta/cli_format.py``: ``history`` and ``describe`` as text.

The documents here are written by hand in the shapes that
:meth:`DeltaTable.history` and :func:`cli.describe` return;
``tests/delta/test_cli.py`` checks the same text on real tables.
"""

from __future__ import annotations

from typing import Any

from airflow_delta_provider.delta.cli_format import (
    HISTORY_HEADERS,
    MAX_FILES,
    describe_lines,
    history_lines,
    iso_utc,
    pairs,
    type_name,
)
from airflow_delta_provider.delta.cli_table import ELLIPSIS


def test_iso_utc_is_exact_to_the_millisecond():
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(1688691801431) == "2023-07-07T01:03:21.431Z"


def test_pairs_keep_strings_and_spell_other_values_as_json():
    assert pairs({"mode": "Append", "partitionBy": "[]", "n": 2, "keys": ["a"]}) == (
        'mode=Append partitionBy=[] n=2 keys=["a"]'
    )
    assert pairs({"numFiles": "0", "numOutputRows": "2"}, skip_zero=True) == "numOutputRows=2"
    assert pairs(None) == ""


def test_type_name_of_nested_types():
    t = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": {"type": "array", "elementType": "string", "containsNull": True}},
            {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "decimal(10,2)"}},
        ],
    }
    assert type_name(t) == "struct<a: array<string>, m: map<string, decimal(10,2)>>"
    assert type_name("timestamp_ntz") == "timestamp_ntz"


def test_history_one_line_per_commit_under_a_header():
    history = [
        {
            "version": 1,
            "timestamp": 1688691801431,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append", "partitionBy": "[]"},
            "operationMetrics": {"numFiles": "1", "numOutputRows": "2", "numRemovedFiles": "0"},
            "engineInfo": "Apache-Spark/3.4.0 Delta-Lake/3.0.0",
        },
        {"version": 0, "timestamp": 1688691700000},  # a commit without commitInfo
    ]
    header, first, second = history_lines(history)
    assert header.split() == list(HISTORY_HEADERS)
    assert first.split() == [
        "1",
        "2023-07-07T01:03:21.431Z",
        "WRITE",
        "mode=Append",
        "partitionBy=[]",
        "numFiles=1",
        "numOutputRows=2",
        "Apache-Spark/3.4.0",
        "Delta-Lake/3.0.0",
    ]
    assert second.split() == ["0", "2023-07-07T01:01:40.000Z"]
    assert first.index("WRITE") == header.index("operation")  # aligned


def test_history_clips_long_cells():
    history = [{"version": 0, "timestamp": 0, "operation": "DELETE", "operationParameters": {"predicate": "x" * 500}}]
    row = history_lines(history)[1]
    assert ELLIPSIS in row and len(row) < 120


def _doc(files: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "version": 3,
        "timestamp": 0,
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "appendOnly"],
        },
        "metadata": {
            "id": "abc",
            "name": None,
            "partitionColumns": ["p"],
            "configuration": {"delta.enableDeletionVectors": "true", "delta.appendOnly": "false"},
            "schema": {
                "type": "struct",
                "fields": [
                    {"name": "id", "type": "long", "nullable": False, "metadata": {}},
                    {"name": "p", "type": "string", "nullable": True, "metadata": {}},
                ],
            },
        },
        "numFiles": len(files),
        "sizeInBytes": sum(f["size"] for f in files),
        **extra,
        "files": files,
    }


def _file(i: int, dv: int | None = None) -> dict[str, Any]:
    return {
        "path": f"p=a/part-{i:05d}.parquet",
        "partitionValues": {"p": "a"},
        "size": 100 + i,
        "numRecords": 10,
        "deletionVector": {"storageType": "u", "cardinality": dv} if dv else None,
    }


def test_describe_overview_schema_and_files():
    lines = describe_lines(_doc([_file(0), _file(1, dv=4)], numRecords=16))
    assert lines[:13] == [
        "version:           3",
        "timestamp:         1970-01-01T00:00:00.000Z",
        "protocol:          reader 3, writer 7",
        "readerFeatures:    deletionVectors",
        "writerFeatures:    deletionVectors, appendOnly",
        "id:                abc",
        "name:",
        "partitionColumns:  p",
        "configuration:     delta.appendOnly=false",
        "                   delta.enableDeletionVectors=true",
        "numFiles:          2",
        "sizeInBytes:       201",
        "numRecords:        16",
    ]
    schema = lines.index("schema (2 columns):")
    assert lines[13] == "" and lines[schema + 1 : schema + 4] == [
        "column  type    nullable",
        "id      long    false",
        "p       string  true",
    ]
    files = lines.index("files (2):")
    assert lines[files - 1] == "" and len(lines) == files + 4
    assert lines[files + 1].split() == ["path", "partitionValues", "size", "numRecords", "dvCardinality"]
    assert lines[files + 2].split() == ["p=a/part-00000.parquet", "p=a", "100", "10"]
    assert lines[files + 3].split() == ["p=a/part-00001.parquet", "p=a", "101", "10", "4"]
    assert lines[files + 3].index("4") == lines[files + 1].index("dvCardinality") + len("dvCardinality") - 1


def test_describe_caps_the_files_listed():
    lines = describe_lines(_doc([_file(i) for i in range(MAX_FILES + 5)]))
    files = lines.index(f"files ({MAX_FILES + 5}):")
    assert len(lines) == files + 2 + MAX_FILES + 1
    assert lines[-1] == "... 5 more"
    assert lines[-2].startswith(f"p=a/part-{MAX_FILES - 1:05d}.parquet")


def test_describe_without_stats_files_or_configuration():
    doc = _doc([])
    doc["metadata"]["configuration"] = {}
    lines = describe_lines(doc)
    assert "numRecords:        unknown (no stats)" in lines and "configuration:" in lines
    assert lines[-1] == "files (0):"
