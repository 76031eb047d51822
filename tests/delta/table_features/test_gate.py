"""Unit tests for ``delta/features.py``: the reader and writer protocol gates."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import UnsupportedFeatureError
from airflow_delta_provider.delta.table_features.gate import check_readable, check_writable, unsupported_writer_features

SCHEMA = '{"type":"struct","fields":[]}'


@pytest.mark.parametrize(
    "protocol", [Protocol(1, 1), Protocol(1, 2), Protocol(1, 7, None, ("appendOnly", "invariants"))]
)
def test_reader1_writer_up_to_2_and_writer7_with_v2_features_are_writable(protocol):
    check_readable(protocol)
    check_writable(protocol)
    assert unsupported_writer_features(protocol) == []


@pytest.mark.parametrize("version", [4, 99])
def test_unknown_reader_version_is_refused_naming_it(version):
    with pytest.raises(UnsupportedFeatureError, match=f"reader version {version}"):
        check_readable(Protocol(version, 7))


def test_unknown_reader_feature_is_refused_naming_it():
    p = Protocol(3, 7, ("someFutureFeature", "vacuumProtocolCheck"), ("someFutureFeature", "vacuumProtocolCheck"))
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature") as err:
        check_readable(p)
    assert "vacuumProtocolCheck" not in str(err.value)


def test_reader3_with_only_vacuum_protocol_check_is_readable():
    check_readable(Protocol(3, 7, ("vacuumProtocolCheck",), ("vacuumProtocolCheck",)))


def test_column_mapping_at_reader_2_is_readable_and_an_unknown_mode_is_refused():
    check_readable(Protocol(2, 5), Metadata.new(SCHEMA, (), {"delta.columnMapping.mode": "name"}, created_time=0))
    with pytest.raises(UnsupportedFeatureError, match=r"columnMapping\.mode='position'"):
        check_readable(
            Protocol(2, 5), Metadata.new(SCHEMA, (), {"delta.columnMapping.mode": "position"}, created_time=0)
        )


@pytest.mark.parametrize("writer", [4, 5, 6])
def test_legacy_writer_versions_4_to_6_are_writable_whatever_the_metadata(writer):
    """Every feature they switch on is implemented (change data feed, generated
    columns, column mapping, identity columns): nothing to refuse."""
    check_readable(Protocol(1, writer))
    check_writable(Protocol(1, writer))


def test_generated_and_identity_columns_are_supported_writer_features():
    """Issue 11: every write job computes and checks generated columns, and
    APPEND and MERGE generate identity values (tests/operations/dml/test_generated_columns.py
    and test_identity_columns.py)."""
    check_writable(Protocol(1, 7, None, ("appendOnly", "generatedColumns", "identityColumns", "invariants")))


def test_legacy_writer_version_3_is_writable():
    """Writer 3 adds CHECK constraints, which every write job enforces."""
    check_writable(Protocol(1, 3))


@pytest.mark.parametrize("feature", ["icebergCompatV1", "someFutureFeature"])
def test_writer7_features_we_do_not_implement_are_refused(feature):
    p = Protocol(1, 7, None, ("appendOnly", feature, "invariants"))
    with pytest.raises(UnsupportedFeatureError, match=feature) as err:
        check_writable(p)
    assert "appendOnly," not in str(err.value).split(";")[0]


def test_writer_version_above_7_is_refused():
    with pytest.raises(UnsupportedFeatureError, match="writer version 8"):
        check_writable(Protocol(1, 8))


def test_write_gate_runs_the_read_gate_too():
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        check_writable(Protocol(3, 7, ("someFutureFeature",), ("appendOnly",)))


def _with_dvs(enabled: str = "true") -> Metadata:
    return Metadata.new('{"type":"struct","fields":[]}', [], {"delta.enableDeletionVectors": enabled}, created_time=0)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (Protocol(1, 2), Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))),
        (Protocol(1, 1), Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))),
        (Protocol(3, 7, (), ("appendOnly",)), Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors"))),
    ],
)
def test_enabling_deletion_vectors_upgrades_the_protocol_as_delta_spark_does(before, after):
    from airflow_delta_provider.delta.table_features.gate import protocol_for

    assert protocol_for(before, _with_dvs()) == after
    assert protocol_for(after, _with_dvs()) == after  # already there: unchanged
    assert protocol_for(before, _with_dvs("false")) == before
    check_writable(after)


def test_a_metadata_change_enabling_vectors_commits_the_upgrade(tmp_path):
    from dataclasses import replace

    from airflow_delta_provider.delta.table import DeltaTable

    table = DeltaTable(str(tmp_path / "t"))
    txn = table.transaction("CREATE TABLE", parameters={}, snapshot=None)
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    txn.update_metadata(Metadata.new(schema, [], {}, created_time=0))
    txn.commit(metrics={})
    snap = table.snapshot()
    assert snap.protocol == Protocol(1, 2)
    txn = table.transaction("SET TBLPROPERTIES", parameters={}, snapshot=snap)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.enableDeletionVectors": "true"}))
    txn.commit(metrics={})
    assert table.snapshot().protocol.writer_features == ("appendOnly", "deletionVectors", "invariants")


# --- timestampNtz --------------------------------------------------------------------


def _schema_with(delta_type) -> str:
    import json

    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "c", "type": delta_type, "nullable": True, "metadata": {}},
    ]
    return json.dumps({"type": "struct", "fields": fields})


@pytest.mark.parametrize(
    "delta_type",
    [
        "timestamp_ntz",
        {"type": "struct", "fields": [{"name": "at", "type": "timestamp_ntz", "nullable": True, "metadata": {}}]},
        {"type": "array", "elementType": "timestamp_ntz", "containsNull": True},
        {"type": "map", "keyType": "string", "valueType": "timestamp_ntz", "valueContainsNull": True},
    ],
    ids=["column", "struct-field", "array-element", "map-value"],
)
def test_a_timestamp_ntz_column_anywhere_upgrades_the_protocol_as_delta_spark_does(delta_type):
    from airflow_delta_provider.delta.table_features.gate import protocol_for, required_features

    md = Metadata.new(_schema_with(delta_type), [], {}, created_time=0)
    assert required_features(md) == {"timestampNtz"}
    upgraded = protocol_for(Protocol(1, 2), md)
    assert upgraded == Protocol(3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz"))
    assert protocol_for(upgraded, md) is upgraded  # already there: unchanged
    assert protocol_for(Protocol(1, 1), md) == Protocol(3, 7, ("timestampNtz",), ("timestampNtz",))
    check_writable(upgraded, md)


@pytest.mark.parametrize("delta_type", ["timestamp", "date", "string", "decimal(10,2)"])
def test_no_timestamp_ntz_column_no_upgrade(delta_type):
    from airflow_delta_provider.delta.table_features.gate import protocol_for

    before = Protocol(1, 2)
    assert protocol_for(before, Metadata.new(_schema_with(delta_type), [], {}, created_time=0)) is before


def test_timestamp_ntz_with_deletion_vectors_lists_both():
    from airflow_delta_provider.delta.table_features.gate import protocol_for

    md = Metadata.new(_schema_with("timestamp_ntz"), [], {"delta.enableDeletionVectors": "true"}, created_time=0)
    assert protocol_for(Protocol(1, 2), md) == Protocol(
        3, 7, ("deletionVectors", "timestampNtz"), ("appendOnly", "deletionVectors", "invariants", "timestampNtz")
    )
    # A table that has one of the two gets the other added.
    only_dv = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    assert protocol_for(only_dv, md) == Protocol(
        3, 7, ("deletionVectors", "timestampNtz"), ("deletionVectors", "timestampNtz")
    )


def test_timestamp_ntz_tables_are_readable_and_writable():
    p = Protocol(3, 7, ("timestampNtz",), ("timestampNtz",))
    check_readable(p)
    check_writable(p)
