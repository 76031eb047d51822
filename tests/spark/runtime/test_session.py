from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pyspark
import pytest

from airflow_delta_provider.delta.errors import UnsupportedFeatureError
from airflow_delta_provider.spark.runtime.session import (
    REQUIRED_CONF,
    SPARK_DEFAULT_REDACTION_REGEX,
    check_spark_version,
    executor_env_conf,
    get_or_create_session,
    worker_python,
)


def test_session_has_the_settings_delta_files_need(spark):
    for key, value in REQUIRED_CONF.items():
        if not key.startswith("spark.hadoop."):
            assert spark.conf.get(key) == value


def test_get_or_create_returns_the_running_session_and_reapplies_required_conf(spark):
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    again = get_or_create_session(conf={"spark.sql.shuffle.partitions": "2"})
    assert again is spark or again.sparkContext is spark.sparkContext
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_ui_is_off_unless_configured(spark):
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"


# --- One Spark release on both sides -----------------------------------------


def test_installed_pyspark_is_one_release(spark):
    """version.py, the distributions, every Spark jar and the running JVM agree."""
    folder = Path(pyspark.__file__).parent
    version_py = re.search(r"""['"](.+)['"]""", (folder / "version.py").read_text()).group(1)
    jars = {m.group(1): m.group(2) for p in (folder / "jars").glob("spark-*_2.*-*.jar")
            if (m := re.fullmatch(r"(spark-[a-z0-9-]+)_2\.\d+-(.+)\.jar", p.name))}
    assert "spark-core" in jars and "spark-sql" in jars
    assert set(jars.values()) == {version_py}, jars
    assert spark.version == version_py
    assert metadata.version("pyspark") == version_py
    try:
        client = metadata.version("pyspark-client")  # shares the pyspark/ folder
    except metadata.PackageNotFoundError:
        client = version_py
    assert client == version_py


@pytest.mark.parametrize(
    ("python_version", "jvm_version"),
    [("4.2.0", "4.2.0"), ("4.2.1", "4.2.0"), ("4.2.0.dev0", "4.2.0-SNAPSHOT")],
)
def test_version_check_accepts_one_release_line(python_version, jvm_version):
    check_spark_version(python_version, jvm_version)


@pytest.mark.parametrize(
    ("python_version", "jvm_version"),
    [("4.2.0", "4.3.0"), ("4.3.0", "4.2.0"), ("3.5.1", "4.2.0"), ("4.12.0", "4.1.0"), ("unknown", "4.2.0")],
)
def test_version_check_refuses_two_releases(python_version, jvm_version):
    with pytest.raises(UnsupportedFeatureError) as err:
        check_spark_version(python_version, jvm_version, "/site-packages/pyspark")
    message = str(err.value)
    assert f"PySpark {python_version} at /site-packages/pyspark" in message
    assert f"Spark {jvm_version}" in message


def test_session_start_runs_the_version_check(spark, monkeypatch):
    monkeypatch.setattr(pyspark, "__version__", "3.5.1")
    with pytest.raises(UnsupportedFeatureError, match=rf"PySpark 3\.5\.1 .* Spark {re.escape(spark.version)}"):
        get_or_create_session()


# --- Store credentials on the executors ----------------------------------------

DRIVER_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    "AWS_REGION": "eu-west-1",
    "AZURE_STORAGE_ACCOUNT_KEY": "azure-key-value",
    "AZURE_STORAGE_SAS_TOKEN": "sas-token-value",
    "GOOGLE_SERVICE_ACCOUNT_KEY": '{"private_key": "gcs-key-value"}',
    "PATH": "/usr/bin",
    "HOME": "/root",
}


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]"])
def test_local_masters_copy_nothing(master):
    assert executor_env_conf(master, DRIVER_ENV) == {}


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://api:6443", "local-cluster[2,1,1024]"])
def test_remote_masters_get_the_store_variables(master):
    conf = executor_env_conf(master, DRIVER_ENV)
    env = {k.removeprefix("spark.executorEnv."): v for k, v in conf.items() if k.startswith("spark.executorEnv.")}
    assert env == {k: v for k, v in DRIVER_ENV.items() if k not in ("PATH", "HOME")}
    # The secrets Spark's default regex misses are added to it; the rest stay as they are.
    assert conf["spark.redaction.regex"] == (
        f"{SPARK_DEFAULT_REDACTION_REGEX}|AZURE_STORAGE_ACCOUNT_KEY|GOOGLE_SERVICE_ACCOUNT_KEY"
    )


def test_settings_already_chosen_win():
    configured = {"spark.executorEnv.AWS_REGION": "us-east-1", "spark.redaction.regex": "(?i)mine"}
    conf = executor_env_conf("yarn", {"AWS_REGION": "eu-west-1", "AWS_SECRET_ACCESS_KEY": "s"}, configured)
    assert "spark.executorEnv.AWS_REGION" not in conf
    assert conf["spark.executorEnv.AWS_SECRET_ACCESS_KEY"] == "s"
    assert conf["spark.redaction.regex"] == "(?i)mine|AWS_SECRET_ACCESS_KEY"


def test_no_redaction_change_when_spark_hides_every_copied_secret():
    conf = executor_env_conf("yarn", {"AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t", "AWS_REGION": "r"})
    assert set(conf) == {
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY",
        "spark.executorEnv.AWS_SESSION_TOKEN",
        "spark.executorEnv.AWS_REGION",
    }


def test_spark_redacts_every_copied_secret(spark):
    """Spark's own redaction (the UI's and the event log's), on the settings we add."""
    jvm = spark._jvm
    conf = executor_env_conf("spark://host:7077", DRIVER_ENV)
    jconf = jvm.org.apache.spark.SparkConf(False)
    pairs = jvm.java.util.ArrayList()
    for key, value in conf.items():
        jconf.set(key, value)
        pairs.add(jvm.scala.Tuple2(key, value))
    seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(pairs).toSeq()
    shown = {}
    it = jvm.org.apache.spark.util.Utils.redact(jconf, seq).iterator()
    while it.hasNext():
        pair = it.next()
        shown[pair._1()] = pair._2()
    for name, value in DRIVER_ENV.items():
        if name in ("PATH", "HOME"):
            continue
        listed = shown[f"spark.executorEnv.{name}"]
        secret = name not in ("AWS_ACCESS_KEY_ID", "AWS_REGION")
        assert (listed != value) == secret, (name, listed)
    # Our copy of Spark's default regex is the JVM's.
    config = getattr(getattr(jvm.org.apache.spark.internal.config, "package$"), "MODULE$")
    assert config.SECRET_REDACTION_PATTERN().defaultValueString() == SPARK_DEFAULT_REDACTION_REGEX


def test_local_python_workers_see_the_driver_environment(spark):
    """Why local masters copy nothing: workers inherit the environment the driver
    had when the session started (pytest sets PYTEST_VERSION before any test)."""
    import os

    def probe(_):
        import os

        yield os.environ.get("PYTEST_VERSION")

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect() == [os.environ["PYTEST_VERSION"]]


@pytest.mark.parametrize(
    ("master", "environ", "configured", "expected"),
    [
        ("local[*]", {}, {}, sys.executable),
        ("local[2]", {}, {"spark.pyspark.python": "/opt/py/bin/python"}, "/opt/py/bin/python"),
        ("local", {"PYSPARK_PYTHON": "/usr/bin/python3.12"}, {}, None),
        ("spark://host:7077", {}, {}, None),
        ("yarn", {}, {}, None),
    ],
)
def test_worker_python(master, environ, configured, expected):
    assert worker_python(master, configured, environ) == expected
