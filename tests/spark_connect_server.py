"""A Spark Connect server for the tests, from the pip ``pyspark``, on a loopback port.

The pip package carries the server (the ``spark-connect`` jar); it is started
as spark-submit starts it (``--class ...SparkConnectServer spark-internal``),
in its own process group, on ``local[2]``, bound to 127.0.0.1. The session
fixture ``spark_connect`` shares one warm server; ``fresh_spark_connect``
starts a dedicated one a test may kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.storage_servers import free_port, wait_for_port

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STARTUP_LIMIT_S = 120.0


#: ``make test`` starts the tests' JVMs with C1 alone (the Makefile's ``TEST_JVM_OPTS``
#: in this variable): a spark-submit lives seconds and spends about 40% less CPU so.
SHORT_LIVED_JVM_OPTIONS = "SPARK_SUBMIT_OPTS"


def long_lived_jvm_env() -> dict[str, str]:
    """The environment for a JVM that serves a whole module or session (a Connect
    server, the shared SparkSession): it runs long enough for C2 to pay back."""
    return {key: value for key, value in os.environ.items() if key != SHORT_LIVED_JVM_OPTIONS}


class ConnectServer:
    """One running Spark Connect server.

    ``conf`` goes on spark-submit's command line; ``secret_conf`` (credentials)
    in a properties file only its owner can read.
    """

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str] | None = None,
        conf: dict[str, str] | None = None,
        jars: list[str] | None = None,
        memory: str = "1g",
        secret_conf: dict[str, str] | None = None,
    ) -> None:
        pyspark = pytest.importorskip("pyspark")
        spark_home = Path(pyspark.__file__).resolve().parent
        self.port = free_port()
        self.log = workdir / f"connect-{self.port}.log"
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.driver.memory": memory,
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            **(conf or {}),
        }
        command = [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
        if jars:
            command += ["--jars", ",".join(jars)]
        if secret_conf:  # in a private file: a secret never goes on a command line
            properties = workdir / f"connect-{self.port}.properties"
            properties.touch(mode=0o600)
            properties.write_text("".join(f"{key}={_escaped(value)}\n" for key, value in secret_conf.items()))
            command += ["--properties-file", str(properties)]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command.append("spark-internal")
        self.process = subprocess.Popen(
            command,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            env={
                **long_lived_jvm_env(),
                **(env or {}),
                "SPARK_HOME": str(spark_home),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable,
            },
            start_new_session=True,  # its own process group, stopped as one
        )
        try:
            wait_for_port(self.port, self.process, timeout=STARTUP_LIMIT_S)
        except RuntimeError as exc:
            self.stop()
            pytest.fail(f"{exc}; the server's log says:\n{self.log.read_text(errors='replace')[-3000:]}")

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL the server and its children, as a crash would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def _escaped(value: str) -> str:
    """``value`` as a Java properties file holds it (backslashes and line ends escaped)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory) -> Iterator[ConnectServer]:
    """The session's shared Spark Connect server."""
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"))
    yield server
    server.stop()


@pytest.fixture
def fresh_spark_connect(tmp_path: Path) -> Iterator[Callable[..., ConnectServer]]:
    """Start dedicated servers (``env`` adds to their environment); all are stopped after the test."""
    started: list[ConnectServer] = []

    def start(env: dict[str, str] | None = None) -> ConnectServer:
        server = ConnectServer(tmp_path, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.05)
