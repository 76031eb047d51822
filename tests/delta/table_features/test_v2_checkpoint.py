"""Tests for :mod:`airflow_delta_provider.delta.table_features.v2_checkpoint`
(writing and reading V2 checkpoints: tests/delta/checkpoint/test_v2.py)."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features import v2_checkpoint

SCHEMA = json.dumps({"type": "struct", "fields": []})


def test_a_listed_feature_means_v2_checkpoints():
    assert v2_checkpoint.uses_v2_checkpoints(Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)))
    assert not v2_checkpoint.uses_v2_checkpoints(Protocol(1, 2))


def test_the_checkpoint_policy_asks_for_it():
    assert v2_checkpoint.is_required(Metadata.new(SCHEMA, (), {"delta.checkpointPolicy": "v2"}, created_time=0))
    assert not v2_checkpoint.is_required(Metadata.new(SCHEMA, (), {}, created_time=0))
