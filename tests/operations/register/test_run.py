"""REGISTER through the Spark CLI (no Spark): the entry of a table that exists, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.register.spec import RegisterSpec
from airflow_delta_provider.spark.cli import main


def test_register_a_table_then_again_is_a_no_op(uc_env, tmp_path: Path, capsys) -> None:
    catalog, schema = uc_env.schema((tmp_path / "root").as_uri() if (tmp_path / "root").mkdir() is None else "")
    location = (tmp_path / "root" / "t").as_uri()
    write_deltalake(location, pa.table({"id": [1]}))
    for _ in range(2):
        assert main(["register", f"uc://{catalog}.{schema}.t", "--location", location]) == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert (out["operation"], out["version"], out["table"]) == ("REGISTER", 0, location)
    assert uc_env.table(f"{catalog}.{schema}.t")["storage_location"] == location


def test_no_table_at_the_location_registers_nothing(uc_env, tmp_path: Path, capsys) -> None:
    catalog, schema = uc_env.schema((tmp_path / "root").as_uri() if (tmp_path / "root").mkdir() is None else "")
    with pytest.raises(SystemExit) as exit_info:
        main(["register", f"uc://{catalog}.{schema}.t", "--location", (tmp_path / "root" / "empty").as_uri()])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("TableNotFoundError")
    assert uc_env.table(f"{catalog}.{schema}.t") is None


def test_location_is_for_catalog_names() -> None:
    with pytest.raises(InvalidArgumentError, match="must be a catalog name"):
        RegisterSpec(table_path="/data/t")
    with pytest.raises(InvalidArgumentError, match="location is for a table named in a catalog"):
        RegisterSpec(table_path="/data/t", location="/data/t2")
    with pytest.raises(InvalidArgumentError, match="location is for a table named in a catalog"):
        AppendSpec(table_path="/data/t", source="/s", source_format="parquet", location="/data/t2")
