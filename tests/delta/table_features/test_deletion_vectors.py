"""Tests for :mod:`airflow_delta_provider.delta.table_features.deletion_vectors`
(the vectors themselves: tests/delta/actions/test_deletion_vectors.py)."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features import deletion_vectors

SCHEMA = json.dumps({"type": "struct", "fields": []})
ON = Metadata.new(SCHEMA, (), {"delta.enableDeletionVectors": "true"}, created_time=0)
OFF = Metadata.new(SCHEMA, (), {}, created_time=0)
LISTED = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def test_the_table_property_asks_for_the_feature():
    assert deletion_vectors.is_required(ON) and not deletion_vectors.is_required(OFF)


def test_writers_mark_rows_only_when_the_table_enables_them_and_lists_the_feature():
    assert deletion_vectors.writes_deletion_vectors(LISTED, ON)
    assert not deletion_vectors.writes_deletion_vectors(LISTED, OFF)  # vectors kept, none written
    assert not deletion_vectors.writes_deletion_vectors(Protocol(1, 2), ON)
