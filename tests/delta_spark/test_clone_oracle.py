"""delta-spark and our SHALLOW CLONE: delta-spark reads our clone of its
table (column mapping, deletion vectors, row tracking, partitions) with the
source's rows at the chosen version and writes to it; our commit matches the
one delta-spark's own ``CREATE TABLE ... SHALLOW CLONE`` writes, action by action."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow_delta_provider.delta.table import DeltaTable
from tests.delta.conftest import read_snapshot
from tests.operations.runs import run_clone

PROPERTIES = (
    "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true', 'delta.enableRowTracking' = 'true'"
)


def _commit(path: str, version: int = 0) -> dict[str, list[dict[str, Any]]]:
    """The actions of one commit, by kind."""
    out: dict[str, list[dict[str, Any]]] = {}
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    for action in (json.loads(line) for line in lines if line.strip()):
        ((kind, body),) = action.items()
        out.setdefault(kind, []).append(body)
    return out


def _comparable(commit: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What two CLONE commits of the same source version share: all but ids, times and engines."""
    info = commit["commitInfo"][0]
    (metadata,) = commit["metaData"]
    configuration = {k: v for k, v in metadata["configuration"].items() if "materialized" not in k}
    adds = sorted(
        (a["path"], json.dumps(a.get("deletionVector"), sort_keys=True), a["dataChange"], a.get("baseRowId") is None)
        for a in commit["add"]
    )
    return {
        "operation": info["operation"],
        "parameters": sorted(info["operationParameters"]),
        "metrics": info["operationMetrics"],
        "protocol": commit["protocol"],
        "blind": info["isBlindAppend"],
        "metadata": {k: v for k, v in metadata.items() if k not in ("id", "createdTime", "configuration")},
        "configuration": configuration,
        "materialized": sorted(k for k in metadata["configuration"] if k not in configuration),
        "adds": adds,
        "domains": {
            d["domain"]: json.loads(d["configuration"]).get("rowIdHighWaterMark") for d in commit["domainMetadata"]
        },
    }


def test_delta_spark_reads_and_writes_our_clone_and_clones_alike(delta_spark, tmp_path):
    source = str(tmp_path / "source")
    delta_spark.sql(
        f"CREATE TABLE {delta_spark.table(source)} (id BIGINT, name STRING, part STRING) USING delta "
        f"PARTITIONED BY (part) TBLPROPERTIES ({PROPERTIES})"
    )
    delta_spark.sql(
        f"INSERT INTO {delta_spark.table(source)} SELECT id, concat('n', id), IF(id % 2 = 0, 'a', 'b') FROM range(20)"
    )
    delta_spark.sql(f"DELETE FROM {delta_spark.table(source)} WHERE id % 5 = 0")  # deletion vectors: v2
    at_v2 = sorted(delta_spark.rows(source))
    delta_spark.sql(f"ALTER TABLE {delta_spark.table(source)} RENAME COLUMN name TO label")
    delta_spark.sql(f"INSERT INTO {delta_spark.table(source)} VALUES (100, 'late', 'c')")  # v4

    ours = str(tmp_path / "ours")
    result = run_clone(None, ours, source, version=2)

    assert result.version == 0
    assert sorted(delta_spark.rows(ours)) == at_v2
    assert [f["name"] for f in json.loads(_commit(ours)["metaData"][0]["schemaString"])["fields"]] == [
        "id",
        "name",
        "part",
    ]
    theirs = str(tmp_path / "theirs")
    delta_spark.sql(
        f"CREATE TABLE {delta_spark.table(theirs)} SHALLOW CLONE {delta_spark.table(source)} VERSION AS OF 2"
    )
    assert _comparable(_commit(ours)) == _comparable(_commit(theirs))
    source_names = {k: v for k, v in _commit(source)["metaData"][0]["configuration"].items() if "materialized" in k}
    for clone in (ours, theirs):  # each clone names its own materialized row tracking columns
        names = {k: v for k, v in _commit(clone)["metaData"][0]["configuration"].items() if "materialized" in k}
        assert names.keys() == source_names.keys() and not set(names.values()) & set(source_names.values())
    assert (
        _commit(ours)["commitInfo"][0]["operationParameters"] == _commit(theirs)["commitInfo"][0]["operationParameters"]
    )

    # delta-spark writes to our clone, in its own root; the source keeps its rows.
    delta_spark.sql(f"DELETE FROM {delta_spark.table(ours)} WHERE id < 4")
    delta_spark.sql(f"INSERT INTO {delta_spark.table(ours)} VALUES (200, 'new', 'a')")
    expected = sorted([r for r in at_v2 if r[0] >= 4] + [(200, "new", "a")])
    assert sorted(delta_spark.rows(ours)) == expected
    assert sorted(tuple(r.values()) for r in read_snapshot(DeltaTable(ours).snapshot()).to_pylist()) == expected
    assert len(delta_spark.rows(source)) == len(at_v2) + 1
