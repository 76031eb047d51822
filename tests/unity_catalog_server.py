"""A real Unity Catalog REST server for the tests, on a loopback port.

``olai-uc-server`` (crates.io, Apache-2.0) is an independent Rust
implementation of the Unity Catalog REST API; it starts in well under a
second and vends credentials (a SAS for Azurite from an ``azure_storage_key``
credential; nothing for ``file://`` tables). The binary comes from, in order:

- ``UC_SERVER_BIN``;
- ``../shared/uc-reference/uc-server.gz`` beside the repository (this
  workspace's copy), unpacked into ``~/.cache/airflow-delta-provider/uc-server``;
- ``cargo install --locked olai-uc-server --version 0.0.11 --features bin``
  into that cache (10 to 20 minutes, once); if that fails, the tests fail
  naming the command.

:class:`UnityCatalogServer` also sets up what a table needs there: a catalog
and schema with a storage root, and a storage credential with an external
location over that root.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage_servers import AZURITE_ACCOUNT, AZURITE_KEY, free_port, stop_process, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
UC_VERSION = "0.0.11"
CACHE = Path.home() / ".cache" / "airflow-delta-provider" / "uc-server"
SHARED_GZ = ROOT.parent / "shared" / "uc-reference" / "uc-server.gz"
INSTALL = ["cargo", "install", "--locked", "olai-uc-server", "--version", UC_VERSION, "--features", "bin"]


def uc_server_binary() -> Path:
    """The server's executable (see the module docs for where it comes from)."""
    configured = os.environ.get("UC_SERVER_BIN")
    if configured:
        return Path(configured)
    unpacked = CACHE / f"uc-server-{UC_VERSION}"
    if unpacked.exists():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    if SHARED_GZ.exists():
        partial = unpacked.with_suffix(".partial")
        with gzip.open(SHARED_GZ) as src, open(partial, "wb") as dst:
            shutil.copyfileobj(src, dst)
        partial.chmod(0o755)
        partial.rename(unpacked)
        return unpacked
    command = [*INSTALL, "--root", str(CACHE / "cargo")]
    try:
        subprocess.run(command, check=True, timeout=3600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"could not build the Unity Catalog server: {' '.join(command)} failed: {exc}") from exc
    shutil.copy(CACHE / "cargo" / "bin" / "uc-server", unpacked)
    return unpacked


class UnityCatalogServer:
    """One olai-uc-server process; local storage is allowed under the system's temporary folder
    (where ``tmp_path`` is), and each table's folder needs an external location over it."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.root = workdir / "tables"
        self.root.mkdir(parents=True)
        config = workdir / "uc.yaml"
        allowed = str(Path(tempfile.gettempdir()).resolve())
        config.write_text(
            f"host: 127.0.0.1\nport: {self.port}\n"
            f"local_storage:\n  enabled: true\n  allowed-roots: [{json.dumps(allowed)}]\n"
            "ui:\n  serve: false\n"
        )
        self.proc = subprocess.Popen(
            [str(uc_server_binary()), "serve", "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc, timeout=30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One API call; the decoded answer (HTTPError for an error status)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/api/2.1/unity-catalog{path}",
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
        return json.loads(text) if text.strip().startswith("{") else text

    def location(self, url: str, credential: dict[str, Any] | None = None) -> None:
        """A storage credential and an external location covering ``url``."""
        name = f"c{uuid.uuid4().hex[:12]}"
        self.call(
            "POST",
            "/credentials",
            {
                "name": name,
                "purpose": "STORAGE",
                "skip_validation": True,
                **(credential or {"aws_iam_role": {"role_arn": "arn:aws:iam::000000000000:role/local-only"}}),
            },
        )
        self.call("POST", "/external-locations", {"name": f"l{name}", "url": url, "credential_name": name})

    def schema(self, root: str | None = None) -> tuple[str, str]:
        """A new catalog and schema whose storage root is ``root`` (default: a new local folder)."""
        catalog, schema = f"cat_{uuid.uuid4().hex[:8]}", "sales"
        if root is None:
            folder = self.root / catalog
            folder.mkdir()
            root = folder.as_uri()
        self.location(root)
        self.call("POST", "/catalogs", {"name": catalog, "storage_root": root})
        self.call("POST", "/schemas", {"name": schema, "catalog_name": catalog})
        return catalog, schema

    def azure_schema(self, container: str) -> tuple[str, str]:
        """A catalog and schema over an Azurite container, whose credentials the server vends as a SAS."""
        root = f"abfss://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net/"
        key = {"azure_storage_key": {"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY}}
        self.location(root, key)
        catalog, schema = f"az_{uuid.uuid4().hex[:8]}", "sales"
        self.call("POST", "/catalogs", {"name": catalog, "storage_root": root})
        self.call("POST", "/schemas", {"name": schema, "catalog_name": catalog})
        return catalog, schema

    def table(self, full_name: str) -> dict[str, Any] | None:
        try:
            return self.call("GET", f"/tables/{full_name}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def create_table(self, full_name: str, location: str, fmt: str = "DELTA", columns: Any = ()) -> None:
        catalog, schema, name = full_name.split(".")
        body = {
            "name": name,
            "catalog_name": catalog,
            "schema_name": schema,
            "table_type": "EXTERNAL",
            "data_source_format": fmt,
            "storage_location": location,
            "columns": list(columns),
        }
        self.call("POST", "/tables", body)

    def stop(self) -> None:
        stop_process(self.proc)


@pytest.fixture(scope="session")
def uc_server(tmp_path_factory) -> Iterator[UnityCatalogServer]:
    server = UnityCatalogServer(tmp_path_factory.mktemp("uc"))
    yield server
    server.stop()


@pytest.fixture
def uc_env(uc_server: UnityCatalogServer, monkeypatch) -> UnityCatalogServer:
    """The server, configured for this process by the environment (``UNITY_CATALOG_URL``)."""
    monkeypatch.setenv("UNITY_CATALOG_URL", uc_server.url)
    monkeypatch.setenv("UNITY_CATALOG_TOKEN", "uc-token-" + uuid.uuid4().hex[:8])
    return uc_server


class GrantProxy:
    """A forwarder in front of the server that plays what olai-uc-server does not model: bearer
    tokens it checks (401 without one), and grants per token: ``token`` may read and write;
    ``reader_token`` holds a read-only grant (403 ``PERMISSION_DENIED`` for read-write
    credentials, as Databricks answers a user without MODIFY); and, with :attr:`expires_in`
    set, short-lived credentials (their ``expiration_time`` that many seconds from now).
    Every other request reaches the real server unchanged."""

    def __init__(self, upstream: str, token: str, reader_token: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from threading import Thread

        proxy = self
        self.paths: list[str] = []
        #: Seconds the vended credentials are said to last (None: the server's answer as it is).
        self.expires_in: float | None = None

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _deny(self, status: int, code: str, message: str) -> None:
                body = json.dumps({"error_code": code, "message": message}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                proxy.paths.append(self.path)
                bearer = self.headers.get("authorization")
                if bearer not in (f"Bearer {token}", f"Bearer {reader_token}"):
                    return self._deny(401, "UNAUTHENTICATED", "a valid bearer token is required")
                read_only = bearer == f"Bearer {reader_token}"
                if read_only and "temporary-" in self.path and b"READ_WRITE" in (body or b""):
                    return self._deny(403, "PERMISSION_DENIED", "User does not have MODIFY on the table")
                if read_only and b"PATH_CREATE_TABLE" in (body or b""):
                    return self._deny(403, "PERMISSION_DENIED", "User does not have CREATE EXTERNAL TABLE")
                request = urllib.request.Request(upstream + self.path, data=body, method=self.command)
                request.add_header("content-type", "application/json")
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, data = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                if proxy.expires_in is not None and "temporary-" in self.path and status == 200:
                    answer = json.loads(data)
                    answer["expiration_time"] = int((time.time() + proxy.expires_in) * 1000)
                    data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PATCH = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def count(self, fragment: str) -> int:
        """How many requests so far had ``fragment`` in their path."""
        return sum(fragment in path for path in list(self.paths))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def uc_on_azurite(uc_server, azurite, monkeypatch):
    """A Unity Catalog table over an Azurite container, behind a token-checking proxy (:class:`GrantProxy`);
    the process has the catalog's token and Azurite's endpoint, and no storage key. The connection
    ``uc_reader`` is the same catalog with a token that holds a read-only grant."""
    import pyarrow as pa
    from azure.storage.blob import BlobServiceClient
    from deltalake import write_deltalake

    container = f"c-{uuid.uuid4().hex[:12]}"
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={azurite.endpoint};"
    )
    BlobServiceClient.from_connection_string(conn).create_container(container)
    catalog, schema = uc_server.azure_schema(container)
    token, reader_token = "uc-token-" + uuid.uuid4().hex, "uc-reader-" + uuid.uuid4().hex
    proxy = GrantProxy(uc_server.url, token, reader_token)
    reader = {"conn_type": "unity_catalog", "host": proxy.url, "password": reader_token}
    monkeypatch.setenv("AIRFLOW_CONN_UC_READER", json.dumps(reader))
    for key in [k for k in os.environ if k.startswith("AZURE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("UNITY_CATALOG_URL", proxy.url)
    monkeypatch.setenv("UNITY_CATALOG_TOKEN", token)
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", azurite.endpoint)  # where the store is: not a secret
    monkeypatch.setenv("AZURE_ALLOW_HTTP", "true")
    location = f"abfss://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net/events"
    keyed = {**azurite.settings()}
    write_deltalake(location, pa.table({"id": [1, 2]}), storage_options={k.lower(): v for k, v in keyed.items()})
    uc_server.create_table(f"{catalog}.{schema}.events", location)
    yield {"name": f"uc://{catalog}.{schema}.events", "location": location, "keyed": keyed, "proxy": proxy,
           "token": token, "reader_token": reader_token, "full_name": f"{catalog}.{schema}.events"}  # fmt: skip
    proxy.close()
