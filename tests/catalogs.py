"""The three catalogs, real, behind one small interface for the tests.

- ``uc``: olai-uc-server (:mod:`tests.unity_catalog_server`), well under a second to start;
- ``glue``: moto's Glue, on the session's moto server (it serves every AWS service);
- ``hms``: a Hive Metastore over Thrift with an embedded Derby, from the
  metastore classes in pyspark's own jars (``hive-metastore-2.3.10.jar``), once
  per session (15 to 50 s on two busy cores): only the tests that ask for it start it.

Each :class:`Catalog` makes a new namespace (schema or database) whose storage
root is a local folder, reads an entry back, plants a non-Delta entry, and
sets the environment a task would have (``UNITY_CATALOG_URL``, the AWS chain,
``HIVE_METASTORE_URI``).
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.storage_servers import MotoServer, free_port, stop_process, wait_for_port

KINDS = ("uc", "glue", "hms")


@dataclass
class Entry:
    location: str
    columns: list[tuple[str, str]]
    is_delta: bool


class Catalog:
    kind: str
    env: dict[str, str]

    def namespace(self, root: Path) -> str:
        """A new schema or database over ``root``; its dotted name."""
        raise NotImplementedError

    def entry(self, name: str) -> Entry | None:
        raise NotImplementedError

    def plant_foreign(self, name: str, location: str) -> None:
        """An entry that is not a Delta table (a Parquet table)."""
        raise NotImplementedError

    def reference(self, namespace: str, table: str) -> str:
        return f"{self.kind}://{namespace}.{table}"


class UnityCatalog(Catalog):
    kind = "uc"

    def __init__(self, server: Any) -> None:
        self.server = server
        self.env = {"UNITY_CATALOG_URL": server.url, "UNITY_CATALOG_TOKEN": "uc-token-" + uuid.uuid4().hex[:8]}

    def namespace(self, root: Path) -> str:
        root.mkdir(parents=True, exist_ok=True)
        catalog, schema = self.server.schema(root.resolve().as_uri())
        return f"{catalog}.{schema}"

    def entry(self, name: str) -> Entry | None:
        table = self.server.table(name)
        if table is None:
            return None
        columns = [(c["name"], c["type_text"]) for c in table.get("columns") or ()]
        return Entry(table["storage_location"], columns, table.get("data_source_format") == "DELTA")

    def plant_foreign(self, name: str, location: str) -> None:
        self.server.create_table(name, location, fmt="PARQUET")


class GlueCatalog(Catalog):
    kind = "glue"

    def __init__(self, moto: MotoServer) -> None:
        self.env = {
            "AWS_ACCESS_KEY_ID": "glue-key-id",
            "AWS_SECRET_ACCESS_KEY": "glue-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_GLUE": moto.endpoint,
        }
        import boto3

        self.glue = boto3.client(
            "glue",
            endpoint_url=moto.endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )

    def namespace(self, root: Path) -> str:
        root.mkdir(parents=True, exist_ok=True)
        name = f"db_{uuid.uuid4().hex[:8]}"
        self.glue.create_database(DatabaseInput={"Name": name, "LocationUri": root.as_uri()})
        return name

    def entry(self, name: str) -> Entry | None:
        database, table = name.split(".")
        try:
            found = self.glue.get_table(DatabaseName=database, Name=table)["Table"]
        except self.glue.exceptions.EntityNotFoundException:
            return None
        storage = found["StorageDescriptor"]
        columns = [(c["Name"], c["Type"]) for c in storage.get("Columns") or ()]
        params = found.get("Parameters") or {}
        return Entry(storage["Location"], columns, params.get("spark.sql.sources.provider") == "delta")

    def plant_foreign(self, name: str, location: str) -> None:
        database, table = name.split(".")
        self.glue.create_table(
            DatabaseName=database,
            TableInput={
                "Name": table,
                "TableType": "EXTERNAL_TABLE",
                "Parameters": {"classification": "parquet"},
                "StorageDescriptor": {"Location": location, "Columns": [{"Name": "id", "Type": "bigint"}]},
            },
        )


class HiveMetastore(Catalog):
    kind = "hms"

    def __init__(self, port: int) -> None:
        self.port = port
        self.env = {"HIVE_METASTORE_URI": f"thrift://127.0.0.1:{port}"}

    def _client(self) -> Any:
        from hmsclient.hmsclient import HMSClient

        return HMSClient(host="127.0.0.1", port=self.port)

    def namespace(self, root: Path) -> str:
        from hmsclient.genthrift.hive_metastore.ttypes import Database

        root.mkdir(parents=True, exist_ok=True)
        name = f"db_{uuid.uuid4().hex[:8]}"
        with self._client() as hms:
            hms.create_database(Database(name=name, locationUri=root.as_uri(), description="", parameters={}))
        return name

    def entry(self, name: str) -> Entry | None:
        from hmsclient.genthrift.hive_metastore.ttypes import NoSuchObjectException

        database, table = name.split(".")
        with self._client() as hms:
            try:
                found = hms.get_table(database, table)
            except NoSuchObjectException:
                return None
        columns = [(c.name, c.type) for c in found.sd.cols]
        path = (found.sd.serdeInfo.parameters or {}).get("path") or found.sd.location
        return Entry(path, columns, (found.parameters or {}).get("spark.sql.sources.provider") == "delta")

    def plant_foreign(self, name: str, location: str) -> None:
        from hmsclient.genthrift.hive_metastore.ttypes import (
            FieldSchema,
            SerDeInfo,
            StorageDescriptor,
            Table,
        )

        database, table = name.split(".")
        storage = StorageDescriptor(
            cols=[FieldSchema("id", "bigint", None)],
            location=location,
            inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            serdeInfo=SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"),
        )
        with self._client() as hms:
            hms.create_table(
                Table(tableName=table, dbName=database, sd=storage, tableType="EXTERNAL_TABLE", parameters={})
            )


def start_metastore(workdir: Path) -> tuple[subprocess.Popen, int]:
    """The metastore of pyspark's jars on a free port, with an embedded Derby under ``workdir``."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    port = free_port()
    conf = {
        "hive.async.log.enabled": "false",  # its async logger needs a jar pyspark lacks
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": (workdir / "warehouse").as_uri(),
    }
    command = [
        "java",
        "-Xmx512m",
        "-cp",
        f"{jars}/*",
        "org.apache.hadoop.hive.metastore.HiveMetaStore",
        "-p",
        str(port),
    ]
    for key, value in conf.items():
        command += ["--hiveconf", f"{key}={value}"]
    log = open(workdir / "metastore.log", "wb")  # noqa: SIM115 - the process writes it until it stops
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    wait_for_port(port, proc, timeout=180)
    return proc, port


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory) -> Iterator[HiveMetastore]:
    pytest.importorskip("hmsclient")
    proc, port = start_metastore(tmp_path_factory.mktemp("hms"))
    yield HiveMetastore(port)
    stop_process(proc, grace=10)


@pytest.fixture(params=KINDS)
def catalog(request, monkeypatch) -> Catalog:
    """Each catalog in turn (one server each for the session), configured for this process by the environment."""
    if request.param == "uc":
        found: Catalog = UnityCatalog(request.getfixturevalue("uc_server"))
    elif request.param == "glue":
        found = GlueCatalog(request.getfixturevalue("moto_server"))
    else:
        found = request.getfixturevalue("hive_metastore")
    for key, value in found.env.items():
        monkeypatch.setenv(key, value)
    return found


__all__ = ["KINDS", "Catalog", "Entry", "catalog", "hive_metastore", "start_metastore"]
