"""Real storage servers for the tests, started by fixtures on loopback ports.

- **S3**: moto's standalone server (``moto_server``, from ``moto[server]``).
  It honours ``If-None-Match: *`` on PutObject, as AWS S3 does.
- **Azure**: Azurite's blob service, installed from npm into
  ``~/.cache/airflow-delta-provider/azurite`` the first time and started with
  node. Where node or npm is missing, the Azure cases skip and say why.
- **Faults**: :class:`FaultProxy`, an HTTP forwarder in front of a dedicated
  moto server, can make the store unreachable, ignore ``If-None-Match`` (an
  S3-compatible store without atomic create), or hold a response back after
  the server has applied the request (an answer lost to a timeout).

GCS has no emulator that can be installed here; its URI and credential
handling is unit-tested without a server.

Every backend is handed out as a :class:`Backend`: ``uri(rel)`` names a
location in it, ``storage_options`` configure the core and ``deltalake``,
and ``env`` holds the same settings as the environment variables a user's
worker would have.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

S3_SECRET = "moto-secret-" + uuid.uuid4().hex[:8]
AZURITE_ACCOUNT = "devstoreaccount1"
#: Azurite's well-known development key (public, documented by Microsoft).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURITE_VERSION = "3.37.0"
AZURITE_HOME = Path(os.environ.get("AZURITE_HOME", Path.home() / ".cache" / "airflow-delta-provider" / "azurite"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def stop_process(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Terminate a server, and kill it if it lingers (a threaded server with
    open keep-alive connections may not exit on SIGTERM in time)."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)


def upload_tree(local: str | os.PathLike[str], uri: str, options: dict[str, str] | None = None) -> None:
    """Copy a local folder (a table, a source) into a store, 16 files at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from airflow_delta_provider.delta.storage import open_storage

    storage = open_storage(uri, options)
    root = Path(local)
    files = [p for p in root.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: storage.put(p.relative_to(root).as_posix(), p.read_bytes()), files))


@dataclass
class Backend:
    """One storage backend for a test: where, and how to reach it."""

    name: str
    base: str  # a folder: a local path, or s3://bucket / az://container
    storage_options: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    endpoint: str | None = None

    def uri(self, rel: str) -> str:
        return f"{self.base.rstrip('/')}/{rel.lstrip('/')}"

    @property
    def bucket(self) -> str:
        return self.base.split("://", 1)[1].split("/", 1)[0] if "://" in self.base else ""

    @property
    def secret(self) -> str | None:
        """The secret credential of this backend, for leak checks."""
        for key, value in self.storage_options.items():
            if "SECRET" in key or key.endswith("ACCOUNT_KEY"):
                return value
        return None


# --- S3: moto ------------------------------------------------------------------


class MotoServer:
    """A moto S3 server process on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        server = Path(__file__).with_name("moto_s3_server.py")  # conditional PUTs atomic, as S3's
        self.proc = subprocess.Popen(
            [sys.executable, str(server), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_process(self.proc)

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"b-{uuid.uuid4().hex[:16]}"
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{name}", method="PUT"), timeout=10)
        return name


def s3_settings(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "moto-key-id",
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
    }


def s3_backend(server: MotoServer, endpoint: str | None = None) -> Backend:
    endpoint = endpoint or server.endpoint
    settings = s3_settings(endpoint)
    return Backend("s3", f"s3://{server.create_bucket()}", dict(settings), dict(settings), endpoint)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(moto_server: MotoServer) -> Backend:
    """A new, empty bucket on the shared moto server."""
    return s3_backend(moto_server)


# --- Faults: a forwarding proxy ----------------------------------------------------


class FaultProxy:
    """An HTTP/1.1 forwarder on a loopback port in front of ``upstream``.

    Modes, each switched on by a context manager:

    - :meth:`unreachable`: every connection is closed unanswered, as when
      the server is gone;
    - :meth:`ignoring_if_none_match`: ``If-None-Match`` is dropped from every
      request, as by an S3-compatible store without atomic create;
    - :meth:`delay_responses`: a PUT whose path contains a string is applied
      by the server, and its answer is held back for some seconds (past the
      client's timeout).
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.down = False
        self.strip_if_none_match = False
        self.delay: tuple[float, str] | None = None
        #: Every request forwarded, as (method, path and query).
        self.requests: list[tuple[str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                if proxy.down:
                    self.close_connection = True
                    self.connection.close()
                    return
                proxy.requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()}
                if proxy.strip_if_none_match:
                    headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                finally:
                    upstream.close()
                if self.command == "PUT" and proxy.delay is not None and proxy.delay[1] in self.path:
                    time.sleep(proxy.delay[0])
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @contextlib.contextmanager
    def unreachable(self) -> Iterator[None]:
        self.down = True
        try:
            yield
        finally:
            self.down = False

    @contextlib.contextmanager
    def ignoring_if_none_match(self) -> Iterator[None]:
        self.strip_if_none_match = True
        try:
            yield
        finally:
            self.strip_if_none_match = False

    @contextlib.contextmanager
    def delay_responses(self, seconds: float, path_contains: str) -> Iterator[None]:
        self.delay = (seconds, path_contains)
        try:
            yield
        finally:
            self.delay = None


@dataclass
class FaultyS3(Backend):
    """An S3 backend reached through a :class:`FaultProxy`."""

    proxy: FaultProxy | None = None

    def stop(self) -> None:
        """The store becomes unreachable (its state is kept for :meth:`start`)."""
        assert self.proxy is not None
        self.proxy.down = True

    def start(self) -> None:
        assert self.proxy is not None
        self.proxy.down = False

    def delay_responses(self, seconds: float, path_contains: str):
        assert self.proxy is not None
        return self.proxy.delay_responses(seconds, path_contains)

    def ignoring_if_none_match(self):
        assert self.proxy is not None
        return self.proxy.ignoring_if_none_match()


@pytest.fixture
def stoppable_s3(moto_server: MotoServer) -> Iterator[FaultyS3]:
    """A new bucket reached through a fault proxy (see :class:`FaultProxy`)."""
    proxy = FaultProxy(moto_server.port)
    plain = s3_backend(moto_server, proxy.endpoint)
    yield FaultyS3(plain.name, plain.base, plain.storage_options, plain.env, plain.endpoint, proxy)
    proxy.close()


# --- Azure: Azurite ------------------------------------------------------------------


def azurite_binary() -> Path:
    """The ``azurite-blob`` launcher, installed from npm into the cache once."""
    binary = AZURITE_HOME / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Azurite needs node and npm, and this machine has neither on PATH")
    AZURITE_HOME.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(AZURITE_HOME), f"azurite@{AZURITE_VERSION}"],
        check=True,
        timeout=600,
    )
    return binary


class Azurite:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                str(azurite_binary()),
                "--blobHost", "127.0.0.1",
                "--blobPort", str(self.port),
                "--location", str(workdir),
                "--silent",
                "--skipApiVersionCheck",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    def settings(self, key: str = AZURITE_KEY) -> dict[str, str]:
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": key,
            "AZURE_STORAGE_ENDPOINT": self.endpoint,
            "AZURE_ALLOW_HTTP": "true",
        }

    def create_container(self) -> str:
        from azure.storage.blob import BlobServiceClient

        name = f"c-{uuid.uuid4().hex[:16]}"
        conn = (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={self.endpoint};"
        )
        BlobServiceClient.from_connection_string(conn).create_container(name)
        return name

    def stop(self) -> None:
        stop_process(self.proc)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory) -> Iterator[Azurite]:
    server = Azurite(tmp_path_factory.mktemp("azurite"))
    yield server
    server.stop()


@pytest.fixture
def azure_container(azurite: Azurite) -> Backend:
    """A new, empty container on the shared Azurite."""
    settings = azurite.settings()
    return Backend("azure", f"az://{azurite.create_container()}", dict(settings), dict(settings), azurite.endpoint)


# --- every backend -------------------------------------------------------------------


@pytest.fixture(params=["local", "s3", "azure"])
def storage_backend(request, tmp_path) -> Backend:
    """Each backend in turn: a local folder, a moto bucket, an Azurite container."""
    if request.param == "local":
        return Backend("local", str(tmp_path))
    if request.param == "s3":
        return request.getfixturevalue("s3_bucket")
    return request.getfixturevalue("azure_container")
