"""Real storage servers for the tests, started by fixtures on loopback ports.

- **S3**: moto's standalone server (``moto_server``, from ``moto[server]``).
  It honours ``If-None-Match: *`` on PutObject, as AWS S3 does.
- **Azure**: Azurite's blob service, installed from npm into
  ``~/.cache/airflow-delta-provider/azurite`` the first time and started with
  node. Where node or npm is missing, the Azure cases skip and say why.
- **Faults**: :class:`~tests.fault_proxy.FaultProxy`, an HTTP forwarder in
  front of moto or Azurite (``stoppable_s3``, ``faulty_azure``,
  ``faulty_store``), injects 5xx answers, resets, lost answers and dropped
  bodies by rule; it can also make the store unreachable or ignore
  ``If-None-Match`` (an S3-compatible store without atomic create).

GCS has no emulator that can be installed here; its URI and credential
handling is unit-tested without a server.

Every backend is handed out as a :class:`Backend`: ``uri(rel)`` names a
location in it, ``storage_options`` configure the core and ``deltalake``,
and ``env`` holds the same settings as the environment variables a user's
worker would have.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fault_proxy import FaultProxy

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


# --- Faults: a forwarding proxy (tests/fault_proxy.py) --------------------------------


@dataclass
class FaultyStore(Backend):
    """A backend (S3 or Azure) reached through a :class:`FaultProxy`."""

    proxy: FaultProxy | None = None

    @property
    def faults(self) -> FaultProxy:
        assert self.proxy is not None
        return self.proxy

    def stop(self) -> None:
        """The store becomes unreachable (its state is kept for :meth:`start`)."""
        self.faults.down = True

    def start(self) -> None:
        self.faults.down = False

    def delay_responses(self, seconds: float, path_contains: str):
        return self.faults.delay_responses(seconds, path_contains)

    def ignoring_if_none_match(self):
        return self.faults.ignoring_if_none_match()


#: The S3 flavour, as older tests name it.
FaultyS3 = FaultyStore


def faulty(plain: Backend, proxy: FaultProxy) -> FaultyStore:
    return FaultyStore(plain.name, plain.base, plain.storage_options, plain.env, plain.endpoint, proxy)


@pytest.fixture
def stoppable_s3(moto_server: MotoServer) -> Iterator[FaultyStore]:
    """A new bucket reached through a fault proxy (see :class:`FaultProxy`)."""
    proxy = FaultProxy(moto_server.port)
    yield faulty(s3_backend(moto_server, proxy.endpoint), proxy)
    proxy.close()


@pytest.fixture
def s3_out_of_reach(stoppable_s3, monkeypatch) -> FaultyStore:
    """A faulty S3 in this process's environment (a poller's), with one quick
    store retry: under :data:`~tests.fault_proxy.OUTAGE` a poll fails at once."""
    for key, value in {**stoppable_s3.env, "DELTA_STORE_MAX_RETRIES": "1",
                       "DELTA_STORE_RETRY_INIT_BACKOFF": "10ms"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    return stoppable_s3


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
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--silent",
            "--prefix",
            str(AZURITE_HOME),
            f"azurite@{AZURITE_VERSION}",
        ],
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
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--location",
                str(workdir),
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


def azure_behind(azurite: Azurite, proxy: FaultProxy) -> FaultyStore:
    """A new container on ``azurite``, reached through ``proxy`` (in front of it)."""
    endpoint = f"{proxy.endpoint}/{AZURITE_ACCOUNT}"
    settings = {**azurite.settings(), "AZURE_STORAGE_ENDPOINT": endpoint}
    container = azurite.create_container()
    return FaultyStore("azure", f"az://{container}", dict(settings), dict(settings), endpoint, proxy)


@pytest.fixture
def faulty_azure(azurite: Azurite) -> Iterator[FaultyStore]:
    """A new container on the shared Azurite, reached through a fault proxy."""
    proxy = FaultProxy(azurite.port)
    yield azure_behind(azurite, proxy)
    proxy.close()


#: The stores the fault tests run on: S3 in ``make test``, Azure too with ``FAULTS_ALL=1`` (``make test-faults``).
FAULTY_STORES = ["s3", "azure"] if os.environ.get("FAULTS_ALL") == "1" else ["s3"]


@pytest.fixture(params=FAULTY_STORES)
def faulty_store(request) -> FaultyStore:
    """Each object store in turn (moto's S3; Azurite with ``FAULTS_ALL=1``) behind its own fault proxy."""
    return request.getfixturevalue("stoppable_s3" if request.param == "s3" else "faulty_azure")


# --- every backend -------------------------------------------------------------------


@pytest.fixture(params=["local", "s3", "azure"])
def storage_backend(request, tmp_path) -> Backend:
    """Each backend in turn: a local folder, a moto bucket, an Azurite container."""
    if request.param == "local":
        return Backend("local", str(tmp_path))
    if request.param == "s3":
        return request.getfixturevalue("s3_bucket")
    return request.getfixturevalue("azure_container")
