"""The table properties other engines set are honoured, or ignored on purpose, through every operation.

For each property of :data:`PROPERTIES` (issue 44, item 3), delta-spark creates a
partitioned table with it and inserts rows; then we run APPEND (with a ``txn``),
UPDATE, DELETE, MERGE, OPTIMIZE, CHECKPOINT and VACUUM on it, through the CLI
entry point. After every operation delta-rs reads the rows we expect; at the
end delta-spark reads them too, and continues the table with a write of its
own that we then read. Where a property has an effect, its check looks at it
(``docs/protocol-compliance.rst``, "Table properties", lists which are
honoured and which are ignored, and why).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.cli_operations import metrics_of, run, version_of

#: The table the operations start from: (id, v, part), two partitions, two inserts (two files each).
FIRST = [(i, f"v{i}", "a" if i % 2 else "b") for i in range(0, 10)]
SECOND = [(i, f"v{i}", "a" if i % 2 else "b") for i in range(10, 20)]


@dataclass
class Run:
    """What the operations left, for a property's check."""

    path: Path
    results: dict[str, Any] = field(default_factory=dict)
    #: The add actions each operation's commit wrote, by operation.
    adds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    removes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    files_before_vacuum: set[str] = field(default_factory=set)
    files_after_vacuum: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Property:
    key: str
    value: str
    #: What we do with it: "honoured" or "ignored".
    status: str
    check: Callable[[Run], None] | None = None
    #: Session settings the property's effect needs (auto compaction's file count).
    spark_conf: dict[str, str] = field(default_factory=dict)


def _commit_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _checkpoint(path: Path) -> Any:
    last = json.loads((path / "_delta_log" / "_last_checkpoint").read_text())
    return pq.read_table(path / "_delta_log" / f"{last['version']:020d}.checkpoint.parquet")


def _data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def _check_optimize_write(r: Run) -> None:
    # The APPEND's rows are rebalanced by partition: one file per partition it wrote.
    parts = [a["partitionValues"]["part"] for a in r.adds["append"]]
    assert sorted(parts) == sorted(set(parts)), parts


def _check_auto_compact(r: Run) -> None:
    # The writes compacted the partitions they touched (the session asks for 2 small files).
    assert any(metrics_of(res).get("autoCompactVersion") is not None for res in r.results.values()), r.results
    versions = [
        metrics_of(res)["autoCompactVersion"] for res in r.results.values() if "autoCompactVersion" in metrics_of(res)
    ]
    info = next(a["commitInfo"] for a in _commit_actions(r.path, versions[0]) if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE" and info["operationParameters"]["auto"] in (True, "true")


def _check_target_file_size(r: Run) -> None:
    # Every file is bigger than the 1-byte target: there is nothing OPTIMIZE could bin together.
    assert version_of(r.results["optimize"]) is None or not r.adds.get("optimize"), r.results["optimize"]


def _check_default_optimize(r: Run) -> None:
    # Without the property (here: any other) OPTIMIZE compacts the two files per partition.
    assert r.adds["optimize"], "OPTIMIZE compacted nothing"


def _check_stats_as_struct(r: Run) -> None:
    table = _checkpoint(r.path)
    add_type = table.schema.field("add").type
    assert {"stats", "stats_parsed", "partitionValues_parsed"} <= {f.name for f in add_type}
    adds = [a for a in table.column("add").to_pylist() if a is not None]
    for a in adds:
        parsed, stats = a["stats_parsed"], json.loads(a["stats"])
        assert parsed["numRecords"] == stats["numRecords"]
        assert parsed["minValues"]["id"] == stats["minValues"]["id"]
        assert parsed["nullCount"]["v"] == stats["nullCount"]["v"]
        assert a["partitionValues_parsed"]["part"] == dict(a["partitionValues"])["part"]


def _check_stats_not_as_json(r: Run) -> None:
    table = _checkpoint(r.path)
    assert "stats" not in {f.name for f in table.schema.field("add").type}


def _check_num_indexed_cols(r: Run) -> None:
    for op in ("append", "update", "merge"):
        for a in r.adds[op]:
            assert set(json.loads(a["stats"])["minValues"]) == {"id"}, (op, a["stats"])


def _check_stats_columns(r: Run) -> None:
    for op in ("append", "update", "merge"):
        for a in r.adds[op]:
            assert set(json.loads(a["stats"])["minValues"]) == {"v"}, (op, a["stats"])


def _check_random_prefixes(r: Run) -> None:
    for op in ("append", "update", "merge", "optimize"):
        for a in r.adds[op]:
            folder, _, name = a["path"].rpartition("/")
            assert re.fullmatch(r"[0-9A-Za-z]{2}", folder), (op, a["path"])
            assert name.startswith("part-")
            assert a["partitionValues"]["part"] in ("a", "b")


def _check_txn_retention(r: Run) -> None:
    from airflow_delta_provider.delta.table import DeltaTable

    # The APPEND's txn is older than the 1-second retention by the time of the checkpoint.
    assert DeltaTable(str(r.path)).snapshot().txn_version("props-app") is None
    assert _checkpoint(r.path).column("txn").drop_null().to_pylist() == []


def _check_deleted_file_retention(r: Run) -> None:
    # VACUUM, with the table's own 1-second retention, deleted the files the operations removed.
    removed = {a["path"] for op in ("update", "delete", "merge", "optimize") for a in r.removes[op]}
    assert removed and not (removed & r.files_after_vacuum)
    assert metrics_of(r.results["vacuum"])["numDeletedFiles"] >= len(removed)
    # And the checkpoint keeps no expired tombstone.
    assert _checkpoint(r.path).column("remove").drop_null().to_pylist() == []


PROPERTIES = [
    Property("delta.autoOptimize.optimizeWrite", "true", "honoured", _check_optimize_write),
    Property(
        "delta.autoOptimize.autoCompact",
        "true",
        "honoured",
        _check_auto_compact,
        spark_conf={"spark.databricks.delta.autoCompact.minNumFiles": "2"},
    ),
    Property("delta.targetFileSize", "1", "honoured", _check_target_file_size),
    Property("delta.tuneFileSizesForRewrites", "true", "ignored", _check_default_optimize),
    Property("delta.checkpoint.writeStatsAsStruct", "true", "honoured", _check_stats_as_struct),
    Property("delta.checkpoint.writeStatsAsJson", "false", "honoured", _check_stats_not_as_json),
    Property("delta.dataSkippingNumIndexedCols", "1", "honoured", _check_num_indexed_cols),
    Property("delta.dataSkippingStatsColumns", "v", "honoured", _check_stats_columns),
    Property("delta.randomizeFilePrefixes", "true", "honoured", _check_random_prefixes),
    Property("delta.setTransactionRetentionDuration", "interval 1 seconds", "honoured", _check_txn_retention),
    Property("delta.deletedFileRetentionDuration", "interval 1 seconds", "honoured", _check_deleted_file_retention),
]


def _values(rows: list[tuple]) -> str:
    return ", ".join(f"({i}, '{v}', '{p}')" for i, v, p in rows)


def _deltalake_rows(path: Path) -> list[tuple]:
    from deltalake import DeltaTable as RsTable

    t = RsTable(str(path)).to_pyarrow_table(columns=["id", "v", "part"])
    return sorted(zip(*(t.column(c).to_pylist() for c in ("id", "v", "part"))))


def _new_actions(path: Path, result: Any, kind: str) -> list[dict[str, Any]]:
    version = version_of(result)
    if version is None:
        return []
    return [a[kind] for a in _commit_actions(path, version) if kind in a]


#: The properties ``make test`` runs here (kept few for CI's time): three this suite alone shows honoured. The
#: others have tests of their own elsewhere, or only here (optimized writes, auto compaction, file sizes, stats columns,
#: VACUUM's retention); ``DELTA_PROPERTIES_ALL=1`` (``make test-conformance``) runs every one here too.
IN_MAKE_TEST = frozenset(
    {"delta.checkpoint.writeStatsAsStruct", "delta.randomizeFilePrefixes", "delta.setTransactionRetentionDuration"}
)
_RUN = [p for p in PROPERTIES if os.environ.get("DELTA_PROPERTIES_ALL") or p.key in IN_MAKE_TEST]


@pytest.mark.parametrize("prop", _RUN, ids=lambda p: p.key)
def test_property_through_every_operation(prop: Property, spark, delta_spark, tmp_path: Path) -> None:
    path = tmp_path / "table"
    t = delta_spark.table(str(path))
    # delta-spark refuses the properties it does not know itself (Databricks' targetFileSize,
    # tuneFileSizesForRewrites) unless told to keep arbitrary ones, as a table from Databricks has them.
    arbitrary = "spark.databricks.delta.allowArbitraryProperties.enabled"
    delta_spark.session.conf.set(arbitrary, "true")
    try:
        delta_spark.sql(
            f"CREATE TABLE {t} (id INT, v STRING, part STRING) USING delta PARTITIONED BY (part) "
            f"TBLPROPERTIES ('{prop.key}' = '{prop.value}')"
        )
    finally:
        delta_spark.session.conf.unset(arbitrary)
    delta_spark.sql(f"INSERT INTO {t} VALUES {_values(FIRST)}")
    delta_spark.sql(f"INSERT INTO {t} VALUES {_values(SECOND)}")
    expected = sorted(FIRST + SECOND)
    assert _deltalake_rows(path) == expected

    saved = {k: spark.conf.get(k, None) for k in prop.spark_conf}
    for k, v in prop.spark_conf.items():
        spark.conf.set(k, v)
    r = Run(path)
    try:
        appended = [(i, f"v{i}", "a" if i % 2 else "b") for i in range(20, 24)]
        source = f"SELECT * FROM VALUES {_values(appended)} AS s(id, v, part)"
        steps: list[tuple[str, list[str], Callable[[list[tuple]], list[tuple]]]] = [
            (
                "append",
                ["append", path, "--source-sql", source, "--txn-app-id", "props-app", "--txn-version", "1"],
                lambda rows: sorted(rows + appended),
            ),
            (
                "update",
                ["update", path, "--condition", "id % 3 = 0", "--set", "v=concat(v, '!')"],
                lambda rows: sorted((i, v + "!" if i % 3 == 0 else v, p) for i, v, p in rows),
            ),
            ("delete", ["delete", path, "--condition", "id % 5 = 1"], lambda rows: [x for x in rows if x[0] % 5 != 1]),
            (
                "merge",
                [
                    "merge",
                    path,
                    "--source-sql",
                    "SELECT * FROM VALUES (2, 'm2', 'b'), (30, 'm30', 'b') AS s(id, v, part)",
                    "--on",
                    "t.id = s.id",
                    "--clauses",
                    json.dumps([{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]),
                ],
                lambda rows: sorted([x for x in rows if x[0] != 2] + [(2, "m2", "b"), (30, "m30", "b")]),
            ),
            ("optimize", ["optimize", path], lambda rows: rows),
            ("checkpoint", ["checkpoint", path], lambda rows: rows),
        ]
        for name, argv, change in steps:
            if name == "checkpoint":
                time.sleep(1.2)  # past the 1-second retentions of txn and tombstones
            r.results[name] = run(spark, *argv)
            r.adds[name] = _new_actions(path, r.results[name], "add")
            r.removes[name] = _new_actions(path, r.results[name], "remove")
            expected = change(expected)
            assert _deltalake_rows(path) == expected, f"after {name}"
        r.files_before_vacuum = _data_files(path)
        r.results["vacuum"] = run(spark, "vacuum", path)
        r.files_after_vacuum = _data_files(path)
        assert _deltalake_rows(path) == expected, "after vacuum"
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)

    if prop.check is not None:  # on our checkpoint, before delta-spark writes one of its own
        prop.check(r)

    # delta-spark reads the same rows, and continues the table; we read its write.
    assert sorted(delta_spark.rows(str(path), columns="id, v, part")) == expected
    delta_spark.sql(f"INSERT INTO {t} VALUES (40, 'v40', 'a')")
    from airflow_delta_provider.delta.table import DeltaTable

    assert DeltaTable(str(path)).snapshot().metadata.configuration[prop.key] == prop.value
    assert _deltalake_rows(path) == sorted([*expected, (40, "v40", "a")])


def test_every_property_is_in_the_compliance_page() -> None:
    """docs/protocol-compliance.rst lists each property as honoured (naming this test) or ignored (with why)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "protocol-compliance.rst").read_text()
    section = page.split("Table properties other engines set", 1)[1].split("\nConcurrency\n", 1)[0]
    rows = section.split("\n   * - ")[1:]
    for prop in PROPERTIES:
        row = next((r for r in rows if r.startswith(f"``{prop.key}``")), None)
        assert row is not None, prop.key
        status = row.split("\n     - ", 2)[1].strip()
        assert status == prop.status, (prop.key, status)
    assert "test_table_properties_interop.py" in section
