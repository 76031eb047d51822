"""The metastore client's connections: a process reuses an open one while it is fresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_delta_provider.delta.catalog import hive
from airflow_delta_provider.delta.catalog.hive import HiveCatalogClient
from airflow_delta_provider.delta.catalog.reference import parse_reference


def test_a_closed_client_leaves_its_connection_to_the_next_while_it_is_fresh(
    hive_metastore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = hive_metastore.env["HIVE_METASTORE_URI"]
    ref = parse_reference(f"hms://{hive_metastore.namespace(tmp_path / 'root')}.absent")
    first = HiveCatalogClient(uri)
    assert first.get(ref) is None
    first.close()
    second = HiveCatalogClient(uri)
    assert second._transport is first._transport  # reused, not reconnected
    assert second.get(ref) is None
    second.close()

    monkeypatch.setattr(hive, "_IDLE_SECONDS", 0.0)
    third = HiveCatalogClient(uri)
    assert third._transport is not first._transport and not first._transport.isOpen()  # stale: closed
    assert third.get(ref) is None
    third.close()
