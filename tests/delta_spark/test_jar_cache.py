"""The test jars (:mod:`tests.jar_cache`): a set that cannot be had fails, naming what and how to fetch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import jar_cache
from tests.jar_cache import Artifact, JarFetchError, jars


def test_the_cached_sets_hold_what_they_promise():
    delta = [Path(p).name for p in jars("delta-spark")]
    aws = [Path(p).name for p in jars("hadoop-aws")]
    assert f"delta-spark_{jar_cache.SPARK_BINARY}_2.13-{jar_cache.DELTA_VERSION}.jar" in delta
    assert f"delta-storage-{jar_cache.DELTA_VERSION}.jar" in delta
    assert f"hadoop-aws-{jar_cache.HADOOP_VERSION}.jar" in aws
    assert not any(name.startswith("bundle-") for name in aws)  # SDK modules, not the 500 MB bundle
    # Nothing that pyspark ships already: Spark's own versions win.
    assert not any(
        name.startswith(("scala-library", "jackson-core", "hadoop-client-api", "parquet-")) for name in delta + aws
    )


def test_an_artifact_that_cannot_be_fetched_fails_naming_it_and_the_command(tmp_path, monkeypatch):
    monkeypatch.delenv(jar_cache.JARS_DIR_VARIABLE, raising=False)
    monkeypatch.setattr(jar_cache, "CACHE", tmp_path / "cache")
    missing = "io.delta:no-such-artifact_2.13:0.0.1"
    monkeypatch.setitem(jar_cache.JAR_SETS, "missing", (Artifact(missing),))
    with pytest.raises(JarFetchError, match=r"no-such-artifact_2\.13:0\.0\.1.*make test-jars") as failure:
        jars("missing")
    assert "Maven said" in str(failure.value)
    assert not (tmp_path / "cache" / "missing").exists()  # nothing half-fetched is left to be taken as whole


def test_jars_fetched_elsewhere_are_taken_from_the_folder_named(tmp_path, monkeypatch):
    (tmp_path / "delta-spark").mkdir()
    (tmp_path / "delta-spark" / "delta-spark_4.2_2.13-4.4.0.jar").write_bytes(b"")
    monkeypatch.setenv(jar_cache.JARS_DIR_VARIABLE, str(tmp_path))
    assert jars("delta-spark") == [str(tmp_path / "delta-spark" / "delta-spark_4.2_2.13-4.4.0.jar")]
    with pytest.raises(JarFetchError, match="hadoop-aws"):
        jars("hadoop-aws")
