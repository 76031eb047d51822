"""The Spark CLI on tables named in each real catalog, on the shared SparkSession.

On each catalog, APPEND by a new name creates the table and registers it;
UPDATE, MERGE and an APPEND with ``--merge-schema`` run on the entry's location,
and the last copies the new column to the entry. Each result is read back
through the catalog, and by location with delta-rs. Bad input (an unknown name, an entry that is not a
Delta table, a malformed reference) is one stderr line, and nothing is written
or registered. In ``arrow`` mode by a Unity Catalog name, short-lived credentials
are renewed by the driver for its reads and its commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable

from airflow_delta_provider.spark.cli import main


def _source(tmp_path: Path, data: pa.Table, name: str) -> str:
    folder = tmp_path / "sources" / name
    folder.mkdir(parents=True)
    pq.write_table(data, folder / "part-0.parquet")
    return str(folder)


def _run(spark, capsys, *argv: str) -> dict:
    assert main(list(argv), session_factory=lambda conf: spark) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _rows(location: str) -> list[dict]:
    return sorted(RsTable(location).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def test_append_update_merge_and_merge_schema_by_name(spark, catalog, tmp_path: Path, capsys) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    name = catalog.reference(namespace, "orders")
    full = f"{namespace}.orders"

    created = _run(
        spark,
        capsys,
        "append",
        name,
        "--source",
        _source(tmp_path, pa.table({"id": [1, 2], "status": ["new", "new"]}), "a"),
        "--format",
        "parquet",
    )
    entry = catalog.entry(full)
    assert created["version"] == 0 and entry is not None and entry.is_delta
    location = created["table"]
    assert location.rstrip("/").endswith("/orders") and entry.location.rstrip("/") == location.rstrip("/")
    assert entry.columns == [("id", "bigint"), ("status", "string")]

    updated = _run(spark, capsys, "update", name, "--condition", "id = 1", "--set", "status='paid'")
    assert updated["version"] == 1 and updated["metrics"]["numUpdatedRows"] == 1

    clauses = json.dumps([{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}])
    merged = _run(
        spark,
        capsys,
        "merge",
        name,
        "--source",
        _source(tmp_path, pa.table({"id": [2, 3], "status": ["shipped", "new"]}), "m"),
        "--on",
        "t.id = s.id",
        "--clauses",
        clauses,
    )
    assert merged["version"] == 2

    evolved = _run(
        spark,
        capsys,
        "append",
        name,
        "--source",
        _source(tmp_path, pa.table({"id": [4], "status": ["new"], "region": ["eu"]}), "e"),
        "--format",
        "parquet",
        "--merge-schema",
    )
    assert evolved["version"] == 3
    assert catalog.entry(full).columns == [("id", "bigint"), ("status", "string"), ("region", "string")]
    assert _rows(location) == [
        {"id": 1, "status": "paid", "region": None},
        {"id": 2, "status": "shipped", "region": None},
        {"id": 3, "status": "new", "region": None},
        {"id": 4, "status": "new", "region": "eu"},
    ]


def test_bad_names_write_and_register_nothing(spark, catalog, tmp_path: Path, capsys) -> None:
    namespace = catalog.namespace(tmp_path / "root")
    source = _source(tmp_path, pa.table({"id": [1]}), "s")
    foreign = tmp_path / "root" / "pq"
    catalog.plant_foreign(f"{namespace}.pq", foreign.as_uri())
    cases = {
        catalog.reference(namespace, "nope"): ("update", "CatalogTableNotFoundError"),
        catalog.reference(namespace, "pq"): ("append", "NotADeltaTableError"),
        f"{catalog.kind}://only": ("append", "InvalidArgumentError"),
    }
    for name, (operation, error) in cases.items():
        argv = [operation, name, "--condition", "id = 1", "--set", "id=2"] if operation == "update" else [
            operation, name, "--source", source, "--format", "parquet"
        ]  # fmt: skip
        with pytest.raises(SystemExit) as exit_info:
            main(argv, session_factory=lambda conf: spark)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"{error}:"), err
    assert catalog.entry(f"{namespace}.nope") is None
    assert not list((tmp_path / "root").rglob("*.parquet")) and not list((tmp_path / "root").rglob("_delta_log"))


def test_arrow_mode_by_name_renews_short_lived_credentials_for_the_commit(
    spark, uc_on_azurite, tmp_path: Path, capsys, monkeypatch
) -> None:
    """Unity Catalog's SAS said to last a minute (inside the 5-minute margin), on a store the
    process has no key for: the driver renews it through the binding's lease before its reads
    and its commit after the Spark job (tests/delta/storage/test_renewal.py shows a SAS that has
    really expired refused, then renewed), and copies it to the environment later arrow jobs
    forward; the name is looked up once (and read again by the entry's sync after the commit)."""
    table, proxy = uc_on_azurite, uc_on_azurite["proxy"]
    monkeypatch.delenv("AZURE_STORAGE_SAS_KEY", raising=False)  # the CLI sets it: gone after the test
    proxy.expires_in = 60
    proxy.paths.clear()
    source = _source(tmp_path, pa.table({"id": [3]}), "s")

    appended = _run(spark, capsys, "append", table["name"], "--source", source, "--format", "parquet", "--io", "arrow")

    assert appended["version"] == 1
    lookups = [i for i, path in enumerate(proxy.paths) if "/tables/" in path]
    vends = [i for i, path in enumerate(proxy.paths) if "temporary-table-credentials" in path]
    assert lookups[0] == 0 and len(vends) > 2 and vends[-1] < lookups[1]  # bound once, renewed, then synced
    rows = RsTable(table["location"], storage_options={k.lower(): v for k, v in table["keyed"].items()})
    assert sorted(rows.to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3]


def test_an_application_given_the_location_renews_what_the_hook_vended(uc_on_azurite, capsys, monkeypatch) -> None:
    """As DeltaSparkHook submits a name: the location in argv, the vended SAS, the name and the
    catalog's token in the environment. The application binds the name only to renew: one
    lookup, then credentials renewed (said to last a minute) for the driver's reads and commit."""
    from airflow_delta_provider.delta.catalog.binding import bind

    table, proxy = uc_on_azurite, uc_on_azurite["proxy"]
    given = bind(table["name"], write=True)
    assert given is not None
    monkeypatch.setenv("AZURE_STORAGE_SAS_KEY", given.storage_options()["AZURE_STORAGE_SAS_KEY"])
    given.close()
    monkeypatch.setenv("DELTA_CATALOG_RENEWS", table["name"])
    proxy.expires_in = 60
    proxy.paths.clear()

    assert main(["checkpoint", table["location"]], session_factory=None) == 0

    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["version"] == 0
    assert proxy.count("/tables/") == 1 and proxy.count("temporary-table-credentials") > 2
