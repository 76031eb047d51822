"""delta-spark as a benchmark peer: a classic PySpark session in its own process and JVM.

``bench_vs_delta_spark.py`` starts this file as a child process
(:class:`DeltaSparkPeer`). The child starts a classic SparkSession on the
same master and memory as ours, with delta-spark's jars
(``tests.jar_cache.jars("delta-spark")``) in ``spark.jars`` and Delta's
session extension and catalog. So Delta's classes never load in our JVM, and
the peer can reach Delta's JVM API through py4j (``DeltaLog.forTable``).

The protocol is one JSON object a line: requests on the child's stdin,
answers on a pipe of their own (the child's fd 1 is moved to stderr, where
the JVM and Spark log). Each answer carries ``seconds``: the request's work
timed inside the child (``System.nanoTime`` in the JVM for the ``DeltaLog``
calls, ``perf_counter`` around ``spark.sql`` otherwise), so the pipe is not
part of any timing.

Requests (``cmd``): ``sql`` (run a statement, return its rows), ``scan`` (a
full read of a Delta table: the row count and the sum of every row's
``hash``), ``snapshot`` (clear ``DeltaLog``'s cache, then
``DeltaLog.forTable(spark, path).update()``, timed alone and with the
snapshot's ``numOfFiles`` after it), ``checkpoint`` (the same load, then
``DeltaLog.checkpoint``), ``gc`` and ``stop``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: What turns a session into a delta-spark one (Delta's quick start), as in tests/delta_spark_oracle.py.
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
#: Benchmarks VACUUM with a retention of 0 hours.
VACUUM_CONF = {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}


class PeerError(RuntimeError):
    """The peer failed a request; the message carries its error."""


class DeltaSparkPeer:
    """The parent's handle on the child process."""

    def __init__(self, master: str, driver_memory: str, conf: dict[str, str], log: Path) -> None:
        sys.path.insert(0, str(HERE.parent))
        from tests.jar_cache import jars

        settings = {
            "spark.master": master,
            "spark.driver.memory": driver_memory,
            "spark.jars": ",".join(jars("delta-spark")),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            **conf,
            **DELTA_CONF,
            **VACUUM_CONF,
        }
        read_fd, write_fd = os.pipe()
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(write_fd)],
            stdin=subprocess.PIPE,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, "DELTA_PEER_CONF": json.dumps(settings)},
            text=True,
        )
        os.close(write_fd)
        self.answers = os.fdopen(read_fd, "r")
        self.call("ping")

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self.process.stdin.flush()
        line = self.answers.readline()
        if not line:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise PeerError(f"delta-spark peer exited (code {self.process.poll()}); its log ends:\n{tail}")
        answer = json.loads(line)
        if "error" in answer:
            raise PeerError(f"delta-spark peer: {cmd} failed: {answer['error']}")
        return answer

    def sql(self, statement: str) -> dict[str, Any]:
        return self.call("sql", sql=statement)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(PeerError):
                self.call("stop")
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.answers.close()


# --- The child ------------------------------------------------------------------


def _serve(answer_fd: int) -> None:
    from pyspark.sql import SparkSession

    out = os.fdopen(answer_fd, "w")
    settings = json.loads(os.environ["DELTA_PEER_CONF"])
    builder = SparkSession.builder.appName("bench-delta-spark-peer")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    none = jvm.scala.Option.empty()

    def load(path: str) -> Any:
        return delta_log.forTable(spark._jsparkSession, path).update(False, none, none)

    def handle(request: dict[str, Any]) -> dict[str, Any]:
        cmd = request["cmd"]
        if cmd == "ping":
            return {"spark": spark.version}
        if cmd == "gc":
            jvm.System.gc()
            return {}
        if cmd == "sql":
            started = time.perf_counter()
            rows = spark.sql(request["sql"]).collect()
            took = time.perf_counter() - started
            return {"seconds": took, "rows": [r.asDict(recursive=True) for r in rows]}
        if cmd == "scan":  # an aggregate, not the noop sink: Delta pins no snapshot for V2 writes (see dv_scan)
            from pyspark.sql import functions as F

            started = time.perf_counter()
            df = spark.read.format("delta").load(request["path"])
            row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.hash(*df.columns)).alias("h")).collect()[0]
            return {"seconds": time.perf_counter() - started, "rows": row["n"], "hash": row["h"]}
        if cmd == "snapshot":
            delta_log.clearCache()
            started = jvm.System.nanoTime()
            snapshot = load(request["path"])
            loaded = jvm.System.nanoTime()
            files = snapshot.numOfFiles()  # state reconstruction: every live file
            counted = jvm.System.nanoTime()
            return {
                "seconds": (loaded - started) / 1e9,
                "seconds_with_files": (counted - started) / 1e9,
                "version": snapshot.version(),
                "files": files,
            }
        if cmd == "checkpoint":
            delta_log.clearCache()
            started = jvm.System.nanoTime()
            log = delta_log.forTable(spark._jsparkSession, request["path"])
            snapshot = log.update(False, none, none)
            log.checkpoint(snapshot, none)
            took = (jvm.System.nanoTime() - started) / 1e9
            return {"seconds": took, "version": snapshot.version(), "files": snapshot.numOfFiles()}
        raise ValueError(f"unknown request {cmd!r}")

    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "stop":
            out.write("{}\n")
            out.flush()
            break
        try:
            answer = handle(request)
        except Exception as exc:  # the parent raises it as PeerError
            answer = {"error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
        out.write(json.dumps(answer, default=str) + "\n")
        out.flush()
    spark.stop()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
