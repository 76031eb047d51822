"""Tests for :mod:`airflow_delta_provider.delta.table_features.clustering` (a
clustered table's columns through ALTER and replay: test_domain_metadata.py)."""

from __future__ import annotations

import json

from airflow_delta_provider.delta.actions.model import DomainMetadata
from airflow_delta_provider.delta.table_features.clustering import DOMAIN, is_clustered


def test_a_live_clustering_domain_makes_a_table_clustered():
    live = DomainMetadata(DOMAIN, json.dumps({"clusteringColumns": [["day"]]}))
    assert is_clustered({DOMAIN: live})
    assert not is_clustered({DOMAIN: DomainMetadata(DOMAIN, "{}", removed=True)})
    assert not is_clustered({"acme.lineage": DomainMetadata("acme.lineage", "{}")})
