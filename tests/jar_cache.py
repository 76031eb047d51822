"""Jars for the tests and benchmarks only, fetched from Maven Central once and cached.

The product needs no jar at run time (``tests/delta_spark/test_no_delta_jar.py``
proves it). Three sets serve the tests:

- ``delta-spark``: the reference implementation, as the oracle and the
  benchmark peer. Delta 4.4 is built for Spark 4.2 (``delta-spark_4.2_2.13``),
  the Spark this project pins.
- ``hadoop-aws``: Hadoop's S3A connector for ``io="hadoop"`` on S3, at the
  version of the Hadoop inside pyspark (``hadoop-client-api-3.5.0``), with the
  AWS SDK v2 modules it uses (``s3``, ``s3-transfer-manager``, ``sts``) at the
  version Hadoop 3.5.0 is built with, instead of the 500 MB ``bundle``.
- ``hadoop-azure``: Hadoop's ABFS connector for ``io="hadoop"`` on Azure (on
  Azurite, through its Blob endpoint), at the same Hadoop version.

Maven resolves each set with its dependencies (``mvn dependency:copy-dependencies``
on a generated pom); jars that pyspark already ships (Scala, Jackson, Netty,
Parquet, Hadoop's client, ...) are left out, so that Spark's own versions win.
Each set lands in ``~/.cache/airflow-delta-provider/jars/<set>`` (and Maven's
local repository), so reruns need no network. ``DELTA_TEST_JARS_DIR`` points at
jars fetched elsewhere: ``$DELTA_TEST_JARS_DIR/<set>/*.jar``.

``python -m tests.jar_cache [set ...]`` (``make test-jars``) fetches them ahead of time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DELTA_VERSION = "4.4.0"
SPARK_BINARY = "4.2"
HADOOP_VERSION = "3.5.0"
#: The AWS SDK v2 that Hadoop 3.5.0 is built with (hadoop-project's ``aws-java-sdk-v2.version``).
AWS_SDK_VERSION = "2.35.4"

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "airflow-delta-provider" / "jars"
JARS_DIR_VARIABLE = "DELTA_TEST_JARS_DIR"
FETCH_COMMAND = "make test-jars"


@dataclass(frozen=True)
class Artifact:
    coordinates: str  # group:artifact:version
    excludes: tuple[str, ...] = ()  # group:artifact

    def dependency_xml(self) -> str:
        group, artifact, version = self.coordinates.split(":")
        exclusions = "".join(
            "<exclusion><groupId>{}</groupId><artifactId>{}</artifactId></exclusion>".format(*e.split(":"))
            for e in self.excludes
        )
        return (
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>"
        )


#: Each set, by name: the artifacts Maven resolves with their dependencies.
JAR_SETS: dict[str, tuple[Artifact, ...]] = {
    "delta-spark": (Artifact(f"io.delta:delta-spark_{SPARK_BINARY}_2.13:{DELTA_VERSION}"),),
    "hadoop-aws": (
        Artifact(f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}", excludes=("software.amazon.awssdk:bundle",)),
        Artifact(f"software.amazon.awssdk:s3:{AWS_SDK_VERSION}"),
        Artifact(f"software.amazon.awssdk:s3-transfer-manager:{AWS_SDK_VERSION}"),
        Artifact(f"software.amazon.awssdk:sts:{AWS_SDK_VERSION}"),
    ),
    "hadoop-azure": (Artifact(f"org.apache.hadoop:hadoop-azure:{HADOOP_VERSION}"),),
}


class JarFetchError(RuntimeError):
    """A jar set could not be fetched; the message names the artifacts and the command."""


def _artifact_name(jar: str) -> str:
    """``jackson-core-2.21.2.jar`` -> ``jackson-core``; classifiers stay part of the name."""
    return re.sub(r"-\d[\w.\-]*?(?=(-linux|-osx|-windows)?\.jar$)", "", jar).removesuffix(".jar")


def _spark_jar_names() -> set[str]:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return {_artifact_name(jar.name) for jar in jars.glob("*.jar")}


def _pom(artifacts: tuple[Artifact, ...]) -> str:
    dependencies = "".join(a.dependency_xml() for a in artifacts)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>airflow-delta-provider.tests</groupId><artifactId>jars</artifactId><version>1</version>"
        f"<dependencies>{dependencies}</dependencies></project>"
    )


def _fetch(name: str, target: Path) -> None:
    artifacts = JAR_SETS[name]
    wanted = ", ".join(a.coordinates for a in artifacts)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarFetchError(
            f"cannot fetch {wanted}: Maven (mvn) is not installed; install it, or set {JARS_DIR_VARIABLE}"
        )
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "pom.xml").write_text(_pom(artifacts))
        out = Path(work) / "out"
        command = [
            mvn,
            "-q",
            "-B",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={out}",
            "-DincludeScope=runtime",
        ]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise JarFetchError(
                f"cannot fetch {wanted} from Maven Central: run `{FETCH_COMMAND}` "
                f"(mvn dependency:copy-dependencies); Maven said:\n{(done.stdout + done.stderr)[-2000:]}"
            )
        spark_has = _spark_jar_names()
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for jar in out.glob("*.jar"):
            if _artifact_name(jar.name) not in spark_has:
                shutil.copy2(jar, partial / jar.name)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)  # a set is whole or absent


def jars(name: str) -> list[str]:
    """The jar files of set ``name``, fetched on first use.

    Raises :class:`JarFetchError` (naming the artifacts and ``make test-jars``)
    when they cannot be had.
    """
    configured = os.environ.get(JARS_DIR_VARIABLE)
    if configured:
        found = sorted(str(p) for p in (Path(configured) / name).glob("*.jar"))
        if not found:
            raise JarFetchError(f"{JARS_DIR_VARIABLE}={configured} has no jars in {name}/ (expected {JAR_SETS[name]})")
        return found
    target = CACHE / name
    if not any(target.glob("*.jar")):
        _fetch(name, target)
    return sorted(str(p) for p in target.glob("*.jar"))


def main(argv: list[str]) -> int:
    for name in argv or list(JAR_SETS):
        found = jars(name)
        print(f"{name}: {len(found)} jars in {Path(found[0]).parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
