"""The core's readers on tables delta-spark 4.4 wrote (``tests/golden-4.4``).

Each table exercises one feature or operation delta-spark 4.4 has (see
:mod:`tests.delta_spark.golden_4_4`, which made them and recorded
delta-spark's own answers about them). For every table, every reader of the
core must agree with delta-spark:

* the snapshot: version, protocol and its features as DESCRIBE DETAIL lists
  them, metadata (id, partitioning, clustering, properties), the logical
  schema, the live files, their count and size, and the live row count, at
  the latest version; the row count at every version delta-spark can still
  time travel to, and a typed refusal where log cleanup took the version;
* the version probe of the sensors and triggers: the latest version, each
  version's existence, operation and (with in-commit timestamps) time;
* ``describe`` and ``history`` of the core's CLI.

The rows themselves are compared by the Spark scan
(``tests/spark/read/test_golden_4_4.py``); the corpus is checked against a
live delta-spark in ``tests/delta_spark/test_golden_4_4_oracle.py``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import pytest

from airflow_delta_provider.delta.errors import VersionNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.clustering import clustering_columns
from airflow_delta_provider.delta.table_features.features import listed_features
from tests.delta_spark.golden_4_4 import GOLDEN_44_DIR, RECIPES, load_expected

NAMES = [pytest.param(r.name, id=r.name) for r in RECIPES]


def _shape(schema: Any) -> Any:
    """A schema's names, types and nullability, without field metadata."""
    if isinstance(schema, str):
        return schema.replace(" ", "").lower()
    kind = schema["type"]
    if kind == "struct":
        return [(f["name"], _shape(f["type"]), bool(f.get("nullable", True))) for f in schema["fields"]]
    if kind == "array":
        return ("array", _shape(schema["elementType"]), bool(schema.get("containsNull", True)))
    if kind == "map":
        return (
            "map",
            _shape(schema["keyType"]),
            _shape(schema["valueType"]),
            bool(schema.get("valueContainsNull", True)),
        )
    return kind


def _as_strings(parameters: dict[str, Any]) -> dict[str, Any]:
    """commitInfo's operationParameters as DESCRIBE HISTORY shows them (a
    map of strings): the log may hold JSON booleans and numbers, which
    ``history`` prints as the log has them."""
    return {k: v if v is None or isinstance(v, str) else json.dumps(v) for k, v in parameters.items()}


@pytest.mark.parametrize("name", NAMES)
def test_snapshot_matches_delta_spark(name: str) -> None:
    expected = load_expected(name)
    detail = expected["detail"]
    table = DeltaTable(str(GOLDEN_44_DIR / name))
    snap = table.snapshot()

    assert table.latest_version() == snap.version == expected["version"]
    protocol = snap.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (
        detail["minReaderVersion"],
        detail["minWriterVersion"],
    )
    readers, writers = listed_features(protocol)
    assert sorted(readers | writers) == sorted(detail["tableFeatures"])

    assert snap.metadata.id == detail["id"]
    assert list(snap.partition_columns) == detail["partitionColumns"]
    assert [".".join(path) for path in clustering_columns(snap)] == detail["clusteringColumns"]
    assert snap.configuration == detail["properties"]
    assert _shape(snap.schema) == _shape(expected["schema"])

    assert sorted(unquote(f.path) for f in snap.files) == expected["files"]
    assert (snap.num_files, snap.size_in_bytes) == (detail["numFiles"], detail["sizeInBytes"])
    assert snap.num_records == len(expected["rows"][str(snap.version)])


@pytest.mark.parametrize("name", NAMES)
def test_every_version_delta_spark_reads_has_its_row_count(name: str) -> None:
    expected = load_expected(name)
    table = DeltaTable(str(GOLDEN_44_DIR / name))
    for version, rows in expected["rows"].items():
        if isinstance(rows, list):
            assert table.snapshot(version=int(version)).num_records == len(rows), f"v{version}"
        else:  # delta-spark cannot time travel there: neither can we
            with pytest.raises(VersionNotFoundError):
                table.snapshot(version=int(version))
    earliest = min(h["version"] for h in expected["history"])
    if earliest > 0:  # log cleanup took the versions before
        with pytest.raises(VersionNotFoundError):
            table.snapshot(version=earliest - 1)


@pytest.mark.parametrize("name", NAMES)
def test_version_probe_matches_delta_spark_history(name: str) -> None:
    from airflow_delta_provider.delta.log.version_probe import VersionProbe

    expected = load_expected(name)
    probe = VersionProbe(str(GOLDEN_44_DIR / name))
    latest = expected["version"]
    assert probe.latest() == latest
    assert probe.newer_than(latest) is None
    assert probe.table_exists()
    ict = expected["detail"]["properties"].get("delta.enableInCommitTimestamps") == "true"
    for entry in expected["history"]:
        version = entry["version"]
        assert probe.has(version)
        info = probe.info(version)
        assert info.operation == entry["operation"], f"v{version}"
        if ict:  # otherwise delta-spark's time is the file's mtime, which a checkout resets
            assert info.timestamp == entry["timestamp"], f"v{version}"
        if version < latest:
            assert probe.newer_than(version) == latest


@pytest.mark.parametrize("name", NAMES)
def test_cli_describe_and_history_match_delta_spark(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from airflow_delta_provider.delta.cli import main

    expected = load_expected(name)
    detail = expected["detail"]
    path = str(GOLDEN_44_DIR / name)

    assert main(["describe", path]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["version"] == expected["version"]
    assert (described["protocol"]["minReaderVersion"], described["protocol"]["minWriterVersion"]) == (
        detail["minReaderVersion"],
        detail["minWriterVersion"],
    )
    assert described["metadata"]["id"] == detail["id"]
    assert described["metadata"]["partitionColumns"] == detail["partitionColumns"]
    assert described["metadata"]["configuration"] == detail["properties"]
    assert (described["numFiles"], described["sizeInBytes"]) == (detail["numFiles"], detail["sizeInBytes"])
    assert described["numRecords"] == len(expected["rows"][str(expected["version"])])
    assert sorted(f["path"] for f in described["files"]) == expected["files"]

    assert main(["history", path]) == 0
    history = json.loads(capsys.readouterr().out)
    theirs = list(reversed(expected["history"]))
    assert [(h["version"], h["operation"]) for h in history] == [(h["version"], h["operation"]) for h in theirs]
    for ours, entry in zip(history, theirs):
        assert _as_strings(ours["operationParameters"]) == entry["operationParameters"], f"v{entry['version']}"
        if detail["properties"].get("delta.enableInCommitTimestamps") == "true":
            assert ours["timestamp"] == entry["timestamp"]


def test_the_corpus_has_every_recipe_and_its_answers() -> None:
    """A table without its recorded answers (or the reverse) is a broken regeneration."""
    names = {r.name for r in RECIPES}
    tables = {p.name for p in GOLDEN_44_DIR.iterdir() if p.is_dir()}
    answers = {p.name.removesuffix(".expected.json") for p in GOLDEN_44_DIR.glob("*.expected.json")}
    assert tables == answers == names


def test_what_create_table_turns_on_by_default() -> None:
    """delta-spark 4.4's CREATE TABLE with no properties: reader 1, writer 2
    (appendOnly and invariants), no properties. Seen by the core alike."""
    detail = load_expected("default")["detail"]
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (1, 2)
    assert sorted(detail["tableFeatures"]) == ["appendOnly", "invariants"]
    assert detail["properties"] == {}
