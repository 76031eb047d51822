"""Our own Spark never loads a Delta jar (issue 23, item 2).

The product needs no jar at run time; delta-spark runs only as the tests'
oracle, in a JVM of its own (:mod:`tests.delta_spark_oracle`). Two places
could bring a Delta jar in by mistake, and both are looked at for real:

* the shared ``spark`` session of the tests (which every in-process test of
  our commands uses): its JVM classpath, the jars Spark added at run time,
  the settings that add jars, and whether Delta's classes load at all;
* a spark-submit of ours, through :class:`DeltaSparkHook`: spark-submit's
  ``--verbose`` report of what it was given, and the launch command
  (``SPARK_PRINT_LAUNCH_COMMAND``) whose ``-cp`` is the driver JVM's real
  classpath, its ``jars/*`` wildcard expanded.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

#: A Delta Lake jar, by file name (delta-spark, delta-storage, the old
#: delta-core, ...), or Maven's ``io.delta`` group in a coordinate or a path.
_DELTA_JAR = re.compile(r"(?:^|[/\\:,\s])(?:delta[-_][\w.-]*\.jar|io[./]delta\b)")

DELTA_CLASSES = ("io.delta.sql.DeltaSparkSessionExtension", "org.apache.spark.sql.delta.catalog.DeltaCatalog")


def delta_jars(entries: str | list[str]) -> list[str]:
    """The Delta jars among classpath entries (a path-separated string, a
    comma-separated setting, or a list); a ``dir/*`` entry is expanded, as
    the JVM expands it."""
    if isinstance(entries, str):
        entries = [e for e in re.split(r"[:,;\s]", entries) if e]
    found = []
    for entry in entries:
        expanded = sorted(glob.glob(entry[:-1] + "*.jar")) if entry.endswith("*") else [entry]
        found += [e for e in expanded if _DELTA_JAR.search(" " + e)]
    return found


def test_the_check_finds_delta_jars() -> None:
    """The predicate is not blind: delta-spark's own jars, a Maven
    coordinate and a wildcard directory holding one are all found; our
    package and Spark's jars are not."""
    from tests.jar_cache import JarFetchError, jars

    try:
        real = jars("delta-spark")
    except JarFetchError as exc:
        pytest.fail(str(exc), pytrace=False)
    delta = [j for j in real if Path(j).name.startswith("delta")]  # not their dependencies
    assert any("delta-spark_" in j for j in delta) and any("delta-storage" in j for j in delta)
    assert delta_jars(real) == delta
    assert delta_jars("io.delta:delta-spark_4.2_2.13:4.4.0")  # a --packages coordinate
    directory = Path(real[0]).parent
    assert delta_jars(f"/x/spark-core_2.13.jar:{directory}/*")
    assert delta_jars("/x/airflow_delta_provider-1.0.zip,/x/spark-sql_2.13-4.2.0.jar,/x/hadoop-aws-3.5.0.jar") == []


def test_the_shared_session_holds_no_delta_jar(spark) -> None:
    jvm = spark.sparkContext._jvm
    classpath = jvm.System.getProperty("java.class.path")
    assert classpath and delta_jars(classpath) == []
    # Jars added after start (spark.jars, addJar) are listed by the context.
    added = spark.sparkContext._jsc.sc().listJars().mkString(",")
    assert delta_jars(added) == []
    conf = spark.sparkContext.getConf()
    for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath", "spark.executor.extraClassPath"):
        assert delta_jars(conf.get(key, "")) == [], key
    assert "delta" not in conf.get("spark.sql.extensions", "").lower()
    assert "delta" not in conf.get("spark.sql.catalog.spark_catalog", "").lower()
    # Neither the system class loader nor Spark's (which holds --jars) can load Delta.
    loaders = [
        jvm.java.lang.ClassLoader.getSystemClassLoader(),
        jvm.java.lang.Thread.currentThread().getContextClassLoader(),
    ]
    for name in DELTA_CLASSES:
        for loader in loaders:
            with pytest.raises(Exception, match="ClassNotFoundException"):
                jvm.java.lang.Class.forName(name, False, loader)


@pytest.mark.usefixtures("airflow_db")
def test_a_spark_submit_of_ours_holds_no_delta_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One real spark-submit of an APPEND through DeltaSparkHook: what
    spark-submit was given holds no Delta jar, and neither does the
    classpath its driver JVM was launched with."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from airflow_delta_provider.hooks import delta_spark as hook_module
    from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook
    from tests.airflow_env import SPARK_TEST_CONF

    lines: list[str] = []
    observe = hook_module._SparkOutput.observe

    def recording(self, line: str) -> bool:  # the hook still sees every line
        lines.append(line.rstrip("\n"))
        return observe(self, line)

    monkeypatch.setattr(hook_module._SparkOutput, "observe", recording)
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), source)
    table = str(tmp_path / "table")
    hook = DeltaSparkHook(
        conf=SPARK_TEST_CONF,
        verbose=True,
        env_vars={"SPARK_PRINT_LAUNCH_COMMAND": "1"},
        package_cache_dir=tmp_path / "cache",
    )
    result = hook.run("append", table, ["--source", str(source), "--format", "parquet"], token="d/t/no-jar/-1")
    assert result["version"] == 0 and result["metrics"]["numOutputRows"] == 2

    # The driver JVM's launch command: its -cp is the application's classpath.
    launch = [line for line in lines if line.startswith("Spark Command:")]
    assert launch, "spark-submit printed no launch command"
    argv = launch[0].split()
    classpath = argv[argv.index("-cp") + 1]
    entries = classpath.split(os.pathsep)
    assert any(e.endswith("*") and glob.glob(e[:-1] + "spark-core*.jar") for e in entries), classpath
    assert delta_jars(entries) == []

    # spark-submit's own report: its parsed arguments and the classpath it adds.
    assert any(line.strip() == "Classpath elements:" for line in lines), "spark-submit printed no --verbose report"
    parsed = {m.group(1): m.group(2).strip() for m in (re.match(r"^\s*(jars|packages)\s+(.*)$", x) for x in lines) if m}
    assert parsed == {"jars": "null", "packages": "null"}
    assert [line for line in lines if delta_jars(line)] == []
