"""Tests for :mod:`airflow_delta_provider.delta.table_features.features`: the one list of feature names."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.actions.model import Protocol
from airflow_delta_provider.delta.table_features import features


def _names() -> set[str]:
    return {v for k, v in vars(features).items() if k.isupper() and isinstance(v, str)}


def test_every_supported_feature_is_named_here():
    assert _names() >= features.SUPPORTED_READER_FEATURES
    assert _names() >= features.SUPPORTED_WRITER_FEATURES
    # A reader-and-writer feature we read, we also write (vacuumProtocolCheck asks nothing of either).
    assert {
        features.VACUUM_PROTOCOL_CHECK
    } == features.SUPPORTED_READER_FEATURES - features.SUPPORTED_WRITER_FEATURES


@pytest.mark.parametrize(
    ("protocol", "readers", "writers"),
    [
        (Protocol(1, 1), set(), set()),
        (Protocol(1, 2), set(), {"appendOnly", "invariants"}),
        (Protocol(1, 4), set(), {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
        (
            Protocol(2, 5),
            {"columnMapping"},
            {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"},
        ),
        (Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "rowTracking")), {"deletionVectors"}, {"deletionVectors", "rowTracking"}),
    ],
)
def test_listed_features_include_what_legacy_versions_imply(protocol, readers, writers):
    assert features.listed_features(protocol) == (readers, writers)


def test_lists_writer_feature_reads_only_an_explicit_list():
    assert features.lists_writer_feature(Protocol(3, 7, (), ("inCommitTimestamp",)), "inCommitTimestamp")
    assert not features.lists_writer_feature(Protocol(1, 6), "identityColumns")  # implied, not listed
