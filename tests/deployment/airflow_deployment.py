"""A real Airflow deployment for tests: api-server, scheduler, dag-processor
and triggerer as separate processes, as in production.

Behaviour that lives in the scheduler or the triggerer (asset events, their
queue, watchers restarting) cannot be seen through ``dag.test()``. An
:class:`AirflowDeployment` runs ``airflow api-server``, ``airflow
scheduler``, ``airflow dag-processor`` and ``airflow triggerer`` in their own
process groups, on a loopback port, with a throwaway ``AIRFLOW_HOME``, a
SQLite metadata database and the LocalExecutor (Airflow 3.3 accepts SQLite
with the LocalExecutor; it warns only that SQLite is not for production).

The processes get an environment of their own, built from scratch for
Airflow (every ``AIRFLOW*`` variable of the test process is left out), so
nothing leaks into the tests' own Airflow in ``tests/airflow_env.py``, nor
back. The JWT secret that the api-server and the workers share travels in
that environment, never on a command line. Intervals are short so that a
DAG file is parsed, a run created and a trigger started within seconds.

Tests read and change the metadata database with :mod:`sqlite3`
(:meth:`AirflowDeployment.query`, :meth:`AirflowDeployment.execute`), which
is also how an event can be dropped on purpose. :func:`wait_for` polls a
condition until a generous deadline: never a sleep followed by an assert.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
#: The components, in the order they start.
COMPONENTS = ("api-server", "dag-processor", "scheduler", "triggerer")
#: Seconds a condition may take before a test fails (a loaded two-core CI machine).
DEADLINE = 120.0


def wait_for(condition: Callable[[], T], what: str, timeout: float = DEADLINE, every: float = 0.2) -> T:
    """Poll ``condition`` until it returns something truthy, and return that;
    fail with ``what`` when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AirflowDeployment:
    """One Airflow deployment in ``home``, running the DAG files of ``home/dags``."""

    def __init__(self, home: Path, settings: dict[str, str] | None = None) -> None:
        self.home = home
        self.dags_folder = home / "dags"
        self.dags_folder.mkdir(parents=True, exist_ok=True)
        self.logs = home / "process-logs"
        self.logs.mkdir(exist_ok=True)
        self.database = home / "airflow.db"
        self.port = free_port()
        self.env = self._environment(settings or {})
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def _environment(self, settings: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        python_path = [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
        env.update(
            {
                "PYTHONPATH": os.pathsep.join(python_path),  # the package under test, as the test process imports it
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "4",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.database}",
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
                "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
                # Seconds, not minutes: parse new files, create runs and start triggers quickly.
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "1",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__BUNDLE_REFRESH_CHECK_INTERVAL": "1",
                "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2",
                "AIRFLOW__SCHEDULER__JOB_HEARTBEAT_SEC": "1",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "10",
                "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
                "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "5",
                "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                # A task's calls to the api-server (5 s by default) wait out a loaded two-core machine's pauses.
                "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
                **settings,
            }
        )
        return env

    # --- processes --------------------------------------------------------------

    def airflow(self, *args: str, timeout: float = 300) -> str:
        """Run one ``airflow`` command to its end; its output."""
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self, *components: str) -> None:
        """Start ``components`` (default: all of them), each in its own process group."""
        for component in components or COMPONENTS:
            if component in self.processes:
                raise RuntimeError(f"{component} is already running")
            log = open(self.logs / f"{component}.log", "ab")  # noqa: SIM115 (closed with the process)
            self.processes[component] = subprocess.Popen(
                [sys.executable, "-m", "airflow", component],
                env=self.env,
                cwd=self.home,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            log.close()  # the child holds its own descriptor
        if "api-server" in (components or COMPONENTS):
            wait_for(self._api_server_answers, "the api-server to answer")

    def stop(self, *components: str) -> None:
        """Stop ``components`` (default: all, in reverse order): SIGTERM to the
        process group, as a service manager does, then SIGKILL if it lingers."""
        for component in components or tuple(reversed(self.processes)):
            process = self.processes.pop(component, None)
            if process is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
            with contextlib.suppress(ProcessLookupError):  # children the leader left behind, or the leader
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)

    def check_running(self) -> None:
        """Fail when a started component has exited, with the end of its log."""
        for component, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.logs / f"{component}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"airflow {component} exited with {process.returncode}:\n{tail}")

    def _api_server_answers(self) -> bool:
        self.check_running()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True
        return False

    # --- the metadata database ---------------------------------------------------

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.database, timeout=30)
        try:
            yield con
        finally:
            con.close()

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.connect() as con:
            return con.execute(sql, params).fetchall()

    def execute(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """Run ``(sql, params)`` statements in one transaction."""
        with self.connect() as con, con:
            for sql, params in statements:
                con.execute(sql, params)

    def wait(self, condition: Callable[[], T], what: str, timeout: float = DEADLINE) -> T:
        """:func:`wait_for`, failing early when a component has died."""

        def checked() -> T:
            self.check_running()
            return condition()

        return wait_for(checked, what, timeout)

    def dag_runs(self, dag_id: str) -> list[tuple[int, str, str]]:
        """(id, run_id, state) of the DAG's runs, oldest first."""
        rows = self.query("SELECT id, run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id", dag_id)
        return [(int(i), str(r), str(s)) for i, r, s in rows]

    def wait_for_runs_done(self, dag_id: str, count: int, timeout: float = DEADLINE) -> list[tuple[int, str, str]]:
        """The DAG's runs, once it has ``count`` and none is queued or running; fails on a failed run."""

        def done() -> list[tuple[int, str, str]] | None:
            runs = self.dag_runs(dag_id)
            failed = [r for r in runs if r[2] == "failed"]
            if failed:
                raise AssertionError(
                    f"{dag_id}: run {failed[0][1]} failed\n{self.failed_task_logs(dag_id, failed[0][1])}"
                )
            if len(runs) >= count and all(r[2] == "success" for r in runs):
                return runs
            return None

        return self.wait(done, f"{count} finished run(s) of {dag_id}", timeout)

    def failed_task_logs(self, dag_id: str, run_id: str, limit: int = 6000) -> str:
        """The end of each failed task instance's log in the run (read now: the
        temporary ``AIRFLOW_HOME`` is gone when a failure is looked at later)."""
        rows = self.query(
            "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ? ORDER BY task_id", dag_id, run_id
        )
        states = ", ".join(f"{task}: {state}" for task, state in rows)
        parts = [f"task instances of {run_id}: {states or 'none'}"]
        run_logs = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
        for task_id, state in rows:
            if state != "failed":
                continue
            logs = sorted(run_logs.glob(f"task_id={task_id}/**/attempt=*.log"))
            text = logs[-1].read_text(errors="replace")[-limit:] if logs else "(no log file)"
            parts.append(f"--- log of {task_id} ({logs[-1] if logs else run_logs}) ---\n{text}")
        # A task that never started (its worker could not reach the api-server) says why only here.
        scheduler = (self.logs / "scheduler.log").read_text(errors="replace").split("Workload execution failed")
        if len(scheduler) > 1:  # the traceback: the lines up to the next timestamped one
            lines = scheduler[-1].splitlines()[1:]
            traceback = "\n".join(itertools.takewhile(lambda line: not line[:4].isdigit(), lines))
            parts.append(f"--- the scheduler's last failed workload ---\n{traceback[-limit:]}")
        return "\n".join(parts)

    def token(self, username: str = "admin") -> str:
        """A JWT for the API, as ``POST /auth/token`` gives one to a SimpleAuthManager user."""
        passwords = json.loads((self.home / "simple_auth_manager_passwords.json.generated").read_text())
        body = json.dumps({"username": username, "password": passwords[username]}).encode()
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/auth/token", body, headers)
        with urllib.request.urlopen(request, timeout=60) as answer:
            return str(json.load(answer)["access_token"])

    def asset_state(self, asset_name: str, key: str) -> str | None:
        rows = self.query(
            "SELECT s.value FROM asset_state_store s JOIN asset a ON a.id = s.asset_id WHERE a.name = ? AND s.key = ?",
            asset_name,
            key,
        )
        return rows[0][0] if rows else None


@contextlib.contextmanager
def airflow_deployment(home: Path, settings: dict[str, str] | None = None) -> Iterator[AirflowDeployment]:
    """A migrated database and the four components running; all stopped at the end."""
    deployment = AirflowDeployment(home, settings)
    deployment.airflow("db", "migrate")
    try:
        deployment.start()
        yield deployment
    finally:
        deployment.stop()
