"""Tests for :mod:`airflow_delta_provider.delta.table_features.change_data_feed`
(reading the feed of a version range: tests/delta/test_table_changes.py)."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table_features import change_data_feed

ON = {"delta.enableChangeDataFeed": "true"}


def _md(*names: str, configuration: dict | None = None) -> Metadata:
    fields = [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in names]
    return Metadata.new(json.dumps({"type": "struct", "fields": fields}), (), configuration or {}, created_time=0)


def test_the_feed_s_columns_and_change_types_are_the_protocol_s():
    assert change_data_feed.CHANGE_COLUMNS == ("_change_type", "_commit_version", "_commit_timestamp")
    assert change_data_feed.CHANGE_TYPES == ("insert", "delete", "update_preimage", "update_postimage")
    assert change_data_feed.CHANGE_DATA_DIR == "_change_data"


def test_only_the_table_property_asks_for_the_feature():
    assert change_data_feed.is_required(_md("id", configuration=ON))
    assert not change_data_feed.is_required(_md("id"))


@pytest.mark.parametrize("name", ["_change_type", "_COMMIT_VERSION", "_Commit_Timestamp"])
def test_a_column_named_like_the_feed_s_own_is_refused_while_the_feed_is_on(name):
    with pytest.raises(InvalidInputError, match=f"'{name}' is reserved"):
        change_data_feed.check_column_names(_md("id", name, configuration=ON))
    change_data_feed.check_column_names(_md("id", name))  # off: any name
