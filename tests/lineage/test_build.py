"""The operators' and the sensor's OpenLineage methods, on logs written by hand (no Spark).

The events these methods feed are checked end to end, with spark-submit and
the OpenLineage listener, in tests/dags_examples/test_lineage.py.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from airflow_delta_provider.operators.delta import (
    DeltaAlterTableOperator,
    DeltaAppendOperator,
    DeltaCheckpointOperator,
    DeltaDeleteOperator,
    DeltaPurgeDeletionVectorsOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

serde = pytest.importorskip("openlineage.client.serde")

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "order id"}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {"name": "status", "type": "string", "nullable": True, "metadata": {}},
        {
            "name": "tags",
            "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
    ],
}
#: operationMetrics of an UPDATE that rewrote one file: 2 rows changed, 3 copied beside them.
UPDATE_METRICS = {"numUpdatedRows": 2, "numCopiedRows": 3, "numAddedFiles": 1, "numRemovedFiles": 1,
                  "numAddedBytes": 900, "numRemovedBytes": 800}  # fmt: skip


def _write(root: Path, version: int, commit_info: dict[str, Any], *actions: dict[str, Any]) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": {"timestamp": 1_700_000_000_000 + version, **commit_info}}, *actions]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _table(root: Path, schema: dict[str, Any] = SCHEMA) -> Path:
    """Version 0 creates the table; version 1 is an UPDATE that read version 0."""
    metadata = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                "partitionColumns": [], "configuration": {}, "createdTime": 0}  # fmt: skip
    _write(root, 0, {"operation": "WRITE"}, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
           {"metaData": metadata})  # fmt: skip
    metrics = {k: str(v) for k, v in UPDATE_METRICS.items()}
    _write(root, 1, {"operation": "UPDATE", "readVersion": 0, "operationMetrics": metrics})
    return root


def _as_json(lineage: Any) -> dict[str, list[dict[str, Any]]]:
    """The datasets as an OpenLineage consumer reads them."""
    return {
        side: [json.loads(serde.Serde.to_json(d)) for d in getattr(lineage, side)] for side in ("inputs", "outputs")
    }


def _result(table: Path, version: int | None, operation: str, metrics: dict[str, Any]) -> dict[str, Any]:
    return {"table": str(table), "version": version, "operation": operation, "metrics": metrics}


def _complete(operator: Any, result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    operator._committed = result  # what execute() keeps
    return _as_json(operator.get_openlineage_facets_on_complete(None))


def _identity(table: Path, column: str) -> dict[str, Any]:
    return {"namespace": "file", "name": str(table), "field": column,
            "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]}  # fmt: skip


# --- before the run: names only, nothing read ------------------------------------------------


def test_on_start_names_the_datasets_without_reading_anything(tmp_path: Path) -> None:
    table, source = tmp_path / "never_created", tmp_path / "day_1.parquet"
    common = {"table_path": str(table)}
    started = {
        "update": DeltaUpdateOperator(task_id="u", updates={"status": "'x'"}, **common),
        "delete": DeltaDeleteOperator(task_id="d", **common),
        "reorg": DeltaPurgeDeletionVectorsOperator(task_id="r", **common),
        "append": DeltaAppendOperator(task_id="a", source=str(source), **common),
        "checkpoint": DeltaCheckpointOperator(task_id="c", **common),
        "vacuum": DeltaVacuumOperator(task_id="v", **common),
        "alter": DeltaAlterTableOperator(task_id="al", change={"set_properties": {"k": "v"}}, **common),
    }
    names = {
        op: {side: [(d["namespace"], d["name"], sorted(d["facets"])) for d in datasets]
             for side, datasets in _as_json(operator.get_openlineage_facets_on_start()).items()}
        for op, operator in started.items()
    }  # fmt: skip
    table_ds = ("file", str(table), ["storage"])
    assert names == {
        "update": {"inputs": [table_ds], "outputs": [table_ds]},
        "delete": {"inputs": [table_ds], "outputs": [table_ds]},
        "reorg": {"inputs": [table_ds], "outputs": [table_ds]},
        "append": {"inputs": [("file", str(source), [])], "outputs": [table_ds]},
        "checkpoint": {"inputs": [], "outputs": [table_ds]},
        "vacuum": {"inputs": [], "outputs": [table_ds]},
        "alter": {"inputs": [], "outputs": [table_ds]},
    }
    assert not table.exists()


# --- after the run: the committed version ------------------------------------------------------


def test_update_reports_both_versions_the_schema_statistics_and_column_lineage(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    update = DeltaUpdateOperator(
        task_id="u", table_path=str(table), updates={"status": "concat(status, amount)"}, condition="id > 3"
    )
    lineage = _complete(update, _result(table, 1, "UPDATE", UPDATE_METRICS))

    (read,), (written,) = lineage["inputs"], lineage["outputs"]
    assert (read["namespace"], read["name"]) == (written["namespace"], written["name"]) == ("file", str(table))
    assert read["facets"]["version"]["datasetVersion"] == "0"  # the commit's readVersion
    assert written["facets"]["version"]["datasetVersion"] == "1"
    assert written["facets"]["storage"]["storageLayer"] == "delta"
    fields = written["facets"]["schema"]["fields"]
    assert [(f["name"], f["type"], f["ordinal_position"]) for f in fields] == [
        ("id", "long", 1), ("amount", "decimal(10,2)", 2), ("status", "string", 3), ("tags", "map", 4)
    ]  # fmt: skip
    assert fields[0]["description"] == "order id"
    assert [(f["name"], f["type"]) for f in fields[3]["fields"]] == [("key", "string"), ("value", "long")]
    assert read["facets"]["schema"] == written["facets"]["schema"]
    stats = written["outputFacets"]["outputStatistics"]
    assert (stats["rowCount"], stats["size"], stats["fileCount"]) == (5, 900, 1)  # updated + copied rows

    columns = written["facets"]["columnLineage"]["fields"]
    assert columns["id"]["inputFields"] == [_identity(table, "id")]
    assert [(f["field"], [(t["type"], t["subtype"]) for t in f["transformations"]])
            for f in columns["status"]["inputFields"]] == [
        ("amount", [("DIRECT", "TRANSFORMATION")]),
        ("status", [("DIRECT", "TRANSFORMATION"), ("DIRECT", "IDENTITY")]),
        ("id", [("INDIRECT", "CONDITIONAL")]),
    ]  # fmt: skip


def test_delete_filters_on_its_condition_and_counts_the_rows_it_copied(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    _write(table, 2, {"operation": "DELETE", "readVersion": 1})
    metrics = {"numDeletedRows": 2, "numCopiedRows": 7, "numAddedFiles": 1, "numAddedBytes": 1200}
    delete = DeltaDeleteOperator(task_id="d", table_path=str(table), condition="status = 'cancelled'")
    (read,), (written,) = _complete(delete, _result(table, 2, "DELETE", metrics)).values()
    assert (read["facets"]["version"]["datasetVersion"], written["facets"]["version"]["datasetVersion"]) == ("1", "2")
    assert written["outputFacets"]["outputStatistics"]["rowCount"] == 7  # the deleted rows are not written
    lineage = written["facets"]["columnLineage"]
    assert lineage["fields"]["amount"]["inputFields"] == [_identity(table, "amount")]
    assert [(f["field"], f["transformations"]) for f in lineage["dataset"]] == [
        ("status", [{"type": "INDIRECT", "subtype": "FILTER"}])
    ]


def test_append_reads_its_source_and_names_source_columns_when_the_schema_is_replaced(tmp_path: Path) -> None:
    table, source = _table(tmp_path / "t"), tmp_path / "day_1.parquet"
    metrics = {"numFiles": 2, "numOutputRows": 40, "numOutputBytes": 5000}
    overwrite = DeltaAppendOperator(
        task_id="a", table_path=str(table), source=str(source), mode="overwrite", overwrite_schema=True
    )
    (read,), (written,) = _complete(overwrite, _result(table, 1, "WRITE", metrics)).values()
    assert (read["namespace"], read["name"], read["facets"]) == ("file", str(source), {})
    stats = written["outputFacets"]["outputStatistics"]
    assert (stats["rowCount"], stats["size"], stats["fileCount"]) == (40, 5000, 2)
    assert written["facets"]["columnLineage"]["fields"]["amount"]["inputFields"] == [
        {**_identity(table, "amount"), "name": str(source)}
    ]
    # A plain append: which table columns the parquet source had is not known.
    append = DeltaAppendOperator(task_id="a", table_path=str(table), source=str(source))
    assert "columnLineage" not in _complete(append, _result(table, 1, "WRITE", metrics))["outputs"][0]["facets"]


def test_append_from_a_delta_source_reads_the_source_schema(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    narrow = {**SCHEMA, "fields": [f for f in SCHEMA["fields"] if f["name"] in ("id", "status")]}
    source = _table(tmp_path / "source", narrow)
    append = DeltaAppendOperator(task_id="a", table_path=str(table), source=str(source), source_format="delta")
    (read,), (written,) = _complete(append, _result(table, 1, "WRITE", {"numOutputRows": 1})).values()
    assert [f["name"] for f in read["facets"]["schema"]["fields"]] == ["id", "status"]
    assert sorted(written["facets"]["columnLineage"]["fields"]) == ["id", "status"]


def test_checkpoint_and_an_operation_that_changed_nothing(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    checkpoint = DeltaCheckpointOperator(task_id="c", table_path=str(table))
    (written,) = _complete(checkpoint, _result(table, 1, "CHECKPOINT", {"numAddFiles": 1}))["outputs"]
    assert written["facets"]["version"]["datasetVersion"] == "1"  # the checkpointed version
    assert "schema" in written["facets"] and written["outputFacets"] == {}  # no data written
    delete = DeltaDeleteOperator(task_id="d", table_path=str(table), condition="id < 0")
    nothing = _complete(delete, _result(table, None, "DELETE", {}))
    assert [sorted(d["facets"]) for d in nothing["inputs"] + nothing["outputs"]] == [["storage"], ["storage"]]
    assert nothing["outputs"][0]["outputFacets"] == {}


def test_an_unreadable_log_costs_the_schema_not_the_lineage(tmp_path: Path, caplog) -> None:
    table = _table(tmp_path / "t")
    update = DeltaUpdateOperator(task_id="u", table_path=str(table), updates={"status": "'x'"})
    with caplog.at_level(logging.WARNING):
        (read,), (written,) = _complete(update, _result(table, 7, "UPDATE", UPDATE_METRICS)).values()
    assert "cannot read version 7" in caplog.text
    assert written["facets"]["version"]["datasetVersion"] == "7"
    assert "schema" not in written["facets"] and "version" not in read["facets"]
    assert written["outputFacets"]["outputStatistics"]["rowCount"] == 5


# --- the sensor: the table as its input ---------------------------------------------------------


def test_sensor_reports_the_table_at_the_version_it_saw(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    # Version 1 is a metadata-only UPDATE here: every commit counts for this lineage test.
    sensor = DeltaTableVersionSensor(task_id="wait", table_path=str(table), after_version=0, data_changes_only=False)
    started = _as_json(sensor.get_openlineage_facets_on_start())
    assert started["outputs"] == []
    assert [(d["namespace"], d["name"], sorted(d["facets"])) for d in started["inputs"]] == [
        ("file", str(table), ["storage"])
    ]
    assert sensor.poke({}).is_done
    (read,) = _as_json(sensor.get_openlineage_facets_on_complete(None))["inputs"]
    assert read["facets"]["version"]["datasetVersion"] == "1"
    assert [f["name"] for f in read["facets"]["schema"]["fields"]] == ["id", "amount", "status", "tags"]


def test_deferred_sensor_reports_the_version_of_the_trigger_event(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    sensor = DeltaTableVersionSensor(task_id="wait", table_path=str(table), deferrable=True)
    event = {"status": "success", "version": 0, "baseline_version": -1, "table": str(table),
             "timestamp": 1, "operation": "WRITE"}  # fmt: skip
    sensor.execute_complete({}, event)
    (read,) = _as_json(sensor.get_openlineage_facets_on_complete(None))["inputs"]
    assert read["facets"]["version"]["datasetVersion"] == "0"


def test_changes_read_the_table_at_the_last_version_read_and_write_the_folder(tmp_path: Path) -> None:
    from airflow_delta_provider.operators.delta import DeltaChangesOperator

    table = _table(tmp_path / "t")
    out = tmp_path / "changes"
    op = DeltaChangesOperator(task_id="c", table_path=str(table), start_version=0, output_path=str(out))
    started = _as_json(op.get_openlineage_facets_on_start())
    assert [(d["name"], d["facets"].get("version")) for d in started["inputs"]] == [(str(table), None)]
    assert [(d["namespace"], d["name"]) for d in started["outputs"]] == [("file", str(out))]
    op._committed = {"table": str(table), "version": 0, "operation": "CHANGES", "metrics": {}}
    (read,) = _as_json(op.get_openlineage_facets_on_complete(None))["inputs"]
    assert read["facets"]["version"]["datasetVersion"] == "0"
    assert [f["name"] for f in read["facets"]["schema"]["fields"]] == ["id", "amount", "status", "tags"]


# --- a table named in a catalog ---------------------------------------------------------------


def test_a_catalog_name_is_a_symlink_beside_the_storage_name(tmp_path: Path, monkeypatch) -> None:
    """As OpenLineage's Spark integration: the dataset keeps its storage name; the catalog's is a symlink."""
    monkeypatch.setenv("HIVE_METASTORE_URI", "thrift://metastore:9083")
    table = _table(tmp_path / "t")
    operator = DeltaCheckpointOperator(task_id="c", table_path="hms://sales.orders", engine="python")
    assert operator.get_openlineage_facets_on_start() is None  # the location is known once the run resolved it
    operator._location = str(table)
    (output,) = _complete(operator, _result(table, 1, "CHECKPOINT", {}))["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(table))
    assert output["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "hive://metastore:9083", "name": "sales.orders", "type": "TABLE"}
    ]
