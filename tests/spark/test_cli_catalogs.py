"""The Spark CLI on tables named in each real catalog, on the shared SparkSession.

On each catalog, APPEND by a new name creates the table and registers it;
UPDATE, MERGE and an APPEND with ``--merge-schema`` run on the entry's location,
and the last copies the new column to the entry. Each result is read back
through the catalog, and by location with delta-rs. Bad input (an unknown name, an entry that is not a
Delta table, a malformed reference) is one stderr line, and nothing is written
or registered.
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
