"""Binding a name to its table, and keeping its entry, on each real catalog.

Unity Catalog (olai-uc-server), Glue (moto) and a Hive Metastore (Thrift,
embedded Derby), each with tables on local disk written by delta-rs.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.catalog.binding import bind
from airflow_delta_provider.delta.catalog.settings import CatalogSettings
from airflow_delta_provider.delta.errors import (
    CatalogError,
    CatalogTableNotFoundError,
    CatalogUnavailableError,
    InvalidArgumentError,
    NotADeltaTableError,
)
from airflow_delta_provider.delta.table import DeltaTable


def test_register_then_resolve_then_sync_columns(catalog, tmp_path: Path) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    name = catalog.reference(namespace, "events")
    location = (tmp_path / "root" / "elsewhere").as_uri()
    write_deltalake(location, pa.table({"id": [1, 2]}))

    created = bind(name, write=True, create=True, location=location)
    assert created is not None and created.entry is None and created.location == location
    assert created.sync() == "registered"
    entry = catalog.entry(f"{namespace}.events")
    assert entry is not None and entry.is_delta and entry.location.rstrip("/") == location.rstrip("/")
    assert entry.columns == [("id", "bigint")]

    write_deltalake(location, pa.table({"id": [3], "note": ["x"]}), mode="append", schema_mode="merge")
    bound = bind(name, write=True)
    assert bound is not None and bound.entry is not None and bound.location.rstrip("/") == location.rstrip("/")
    assert bound.sync() == "columns updated"
    assert catalog.entry(f"{namespace}.events").columns == [("id", "bigint"), ("note", "string")]
    assert bound.sync() == "unchanged"
    assert bind(name).location == bound.location  # a read binds too


def test_a_new_table_goes_under_the_namespace_root(catalog, tmp_path: Path) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    bound = bind(catalog.reference(namespace, "fresh"), write=True, create=True)
    assert bound is not None and bound.entry is None
    assert bound.location.rstrip("/").endswith("/fresh")
    assert bound.sync() == "no table"  # nothing committed: nothing registered
    assert catalog.entry(f"{namespace}.fresh") is None


def test_unknown_name_foreign_entry_and_bad_location(catalog, tmp_path: Path) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    with pytest.raises(CatalogTableNotFoundError, match="nope"):
        bind(catalog.reference(namespace, "nope"), write=True)
    assert catalog.entry(f"{namespace}.nope") is None
    foreign = (tmp_path / "root" / "parquet").as_uri()
    catalog.plant_foreign(f"{namespace}.pq", foreign)
    with pytest.raises(NotADeltaTableError, match="not a Delta table"):
        bind(catalog.reference(namespace, "pq"), write=True, create=True)
    table = (tmp_path / "root" / "t").as_uri()
    write_deltalake(table, pa.table({"id": [1]}))
    assert bind(catalog.reference(namespace, "t"), write=True, create=True, location=table).sync() == "registered"
    with pytest.raises(InvalidArgumentError, match="is registered at"):
        bind(catalog.reference(namespace, "t"), write=True, create=True, location=(tmp_path / "root" / "o").as_uri())


def test_a_failed_catalog_update_is_a_warning_and_is_retried(catalog, tmp_path: Path) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    location = (tmp_path / "root" / "t").as_uri()
    write_deltalake(location, pa.table({"id": [1]}))
    bound = bind(catalog.reference(namespace, "t"), write=True, create=True, location=location)

    def refuse(*args: object) -> None:
        raise CatalogError("the catalog said no")

    real_register = bound.client.register
    bound.client.register = refuse  # type: ignore[method-assign]
    warnings: list[str] = []
    assert bound.sync(warn=warnings.append) == "failed"
    assert len(warnings) == 1 and catalog.reference(namespace, "t") in warnings[0] and "commit stands" in warnings[0]
    assert DeltaTable(location).latest_version() == 0  # the commit is not undone
    bound.client.register = real_register  # type: ignore[method-assign]
    assert bound.sync() == "registered"  # the next write's sync retries


def test_a_registration_whose_answer_was_lost_is_recognised_and_another_writers_is_not(
    catalog, tmp_path: Path
) -> None:
    """The catalog created the entry, the answer never came (a reset, a 500 after the
    server applied it, or a retry refused as existing): the entry at our location is ours."""
    namespace = catalog.namespace(tmp_path / "root")
    location = (tmp_path / "root" / "t").as_uri()
    write_deltalake(location, pa.table({"id": [1]}))
    bound = bind(catalog.reference(namespace, "t"), write=True, create=True, location=location)
    real_register = bound.client.register

    def applied_then_lost(*args: object) -> None:
        real_register(*args)
        raise CatalogUnavailableError("connection reset by peer")

    bound.client.register = applied_then_lost  # type: ignore[method-assign]
    warnings: list[str] = []
    assert bound.sync(warn=warnings.append) == "registered" and warnings == []
    entry = catalog.entry(f"{namespace}.t")
    assert entry is not None and entry.location.rstrip("/") == location.rstrip("/")

    other = (tmp_path / "root" / "u").as_uri()
    write_deltalake(other, pa.table({"id": [2]}))
    mine = bind(catalog.reference(namespace, "u"), write=True, create=True, location=other)
    elsewhere = (tmp_path / "root" / "theirs").as_uri()

    def another_writer_won(ref: object, location: str, *args: object) -> None:
        real_register(ref, elsewhere, *args)
        raise CatalogError("the table already exists")

    mine.client.register = another_writer_won  # type: ignore[method-assign]
    assert mine.sync(warn=warnings.append) == "failed" and len(warnings) == 1
    assert catalog.entry(f"{namespace}.u").location.rstrip("/") == elsewhere.rstrip("/")


def test_a_unity_catalog_registration_lost_on_the_wire_is_recognised(uc_server, tmp_path: Path) -> None:
    """The same through a proxy that resets the connection after Unity Catalog applied the create."""
    from tests.catalogs import UnityCatalog
    from tests.fault_proxy import FaultProxy, Rule

    catalog = UnityCatalog(uc_server)
    namespace = catalog.namespace(tmp_path / "root")
    location = (tmp_path / "root" / "t").as_uri()
    write_deltalake(location, pa.table({"id": [1]}))
    proxy = FaultProxy(int(uc_server.url.rsplit(":", 1)[1]))
    try:
        settings = CatalogSettings(unity_url=proxy.endpoint, timeout=5)
        bound = bind(catalog.reference(namespace, "t"), settings, write=True, create=True, location=location)
        assert bound is not None
        for fault in ("reset_after", "500_after"):
            with proxy.inject(Rule(fault, methods=("POST",), paths=("*/tables",), schedule=frozenset({1}))) as injected:
                assert bound.sync() == "registered"
            assert [i.fault for i in injected] == [fault]
            entry = catalog.entry(f"{namespace}.t")
            assert entry is not None and entry.location.rstrip("/") == location.rstrip("/")
            uc_server.call("DELETE", f"/tables/{namespace}.t")
    finally:
        proxy.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind", ["uc", "glue", "hms"])
def test_an_unreachable_catalog_is_retryable(kind: str, monkeypatch) -> None:
    port = _closed_port()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", f"http://127.0.0.1:{port}")
    settings = CatalogSettings(unity_url=f"http://127.0.0.1:{port}", hive_uri=f"thrift://127.0.0.1:{port}", timeout=2)
    name = {"uc": "uc://a.b.c", "glue": "glue://a.b", "hms": "hms://a.b"}[kind]
    with pytest.raises(CatalogUnavailableError, match="unreachable"):
        bind(name, settings, write=True, create=True)


def test_malformed_and_unconfigured(monkeypatch) -> None:
    monkeypatch.delenv("UNITY_CATALOG_URL", raising=False)
    with pytest.raises(InvalidArgumentError, match="malformed"):
        bind("uc://a.b")
    with pytest.raises(InvalidArgumentError, match="UNITY_CATALOG_URL"):
        bind("uc://a.b.c", CatalogSettings())
    assert bind("/some/path") is None


def test_credentials_near_their_expiry_are_renewed() -> None:
    """Before each step of a task: fresh ones once less than the margin remains."""
    import time

    from airflow_delta_provider.delta.catalog.binding import RENEW_MARGIN, CatalogTable
    from airflow_delta_provider.delta.catalog.model import CatalogEntry, VendedCredentials
    from airflow_delta_provider.delta.catalog.reference import parse_reference

    class Vending:
        calls = 0

        def table_credentials(self, ref, entry, write):
            Vending.calls += 1
            return VendedCredentials({"AZURE_STORAGE_SAS_KEY": f"sas{Vending.calls}"}, time.time() + 3600, write)

    soon = VendedCredentials({"AZURE_STORAGE_SAS_KEY": "old"}, time.time() + RENEW_MARGIN / 2, True)
    bound = CatalogTable(
        parse_reference("uc://a.b.c"), Vending(), "az://c/t", CatalogEntry("az://c/t", True), True, soon
    )
    assert bound.storage_options({"AZURE_STORAGE_ENDPOINT": "e"}) == {
        "AZURE_STORAGE_ENDPOINT": "e",
        "AZURE_STORAGE_SAS_KEY": "sas1",
    }
    assert bound.storage_options()["AZURE_STORAGE_SAS_KEY"] == "sas1" and Vending.calls == 1  # still fresh
