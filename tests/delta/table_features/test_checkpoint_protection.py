"""Tests for :mod:`airflow_delta_provider.delta.table_features.checkpoint_protection`
(what checkpoints and the log cleanup do with it: tests/delta/checkpoint/)."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features.checkpoint_protection import protected_before, protects_checkpoints

SCHEMA = json.dumps({"type": "struct", "fields": []})
PROTECTED = Protocol(3, 7, (), ("checkpointProtection",))


def _md(configuration: dict) -> Metadata:
    return Metadata.new(SCHEMA, (), configuration, created_time=0)


def test_only_a_listed_feature_protects():
    assert protects_checkpoints(PROTECTED)
    assert not protects_checkpoints(Protocol(1, 2))


def test_the_protected_history_is_below_the_table_property_and_only_with_the_feature():
    md = _md({"delta.requireCheckpointProtectionBeforeVersion": "5"})
    assert protected_before(PROTECTED, md) == 5
    assert protected_before(Protocol(1, 2), md) == 0
    assert protected_before(PROTECTED, _md({})) == 0
