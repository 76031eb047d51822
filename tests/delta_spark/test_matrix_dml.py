"""The interop matrix (:mod:`.matrix`) for UPDATE, DELETE and MERGE."""

from __future__ import annotations

import json

import pytest

from tests.delta_spark.matrix import Cell, Operation, cells, run_cell, write_source

UPDATE = Operation(
    "update",
    ours=lambda c: ["update", c.ours_path, "--condition", "id % 4 = 2", "--set", "v = v + 1"],
    theirs=lambda c: ["UPDATE {t} SET v = v + 1 WHERE id % 4 = 2"],
)
DELETE = Operation(
    "delete",
    ours=lambda c: ["delete", c.ours_path, "--condition", "id % 4 = 3"],
    theirs=lambda c: ["DELETE FROM {t} WHERE id % 4 = 3"],
)


def _merge_source(oracle, cell: Cell) -> None:
    # ids 30-49: 30-38 match the seed (39 was deleted), the rest are new; v changes on every row.
    write_source(oracle, cell.feature, cell.workdir / "source", range(30, 50), v="CAST((id + 1) % 7 AS INT)")


def _star(cell: Cell) -> bool:
    """Whether the MERGE uses ``*``: delta-spark refuses ``UPDATE SET *`` when the source lacks a generated
    or identity column of the target ([DELTA_MERGE_UNRESOLVED_EXPRESSION]), so on those tables both sides
    name the source's columns (we accept ``*`` there: docs/protocol-compliance.rst)."""
    return "GENERATED" not in cell.feature.columns


def _merge_clauses(cell: Cell) -> list[dict]:
    """A matched delete, a matched update and a not-matched insert in one MERGE."""
    columns = "*" if _star(cell) else {c: f"s.{c}" for c in cell.columns}
    return [
        {"when": "matched", "condition": "s.id % 10 = 5", "delete": True},
        {"when": "matched", "update": columns},
        {"when": "not_matched", "insert": columns},
    ]


def _merge_sql(cell: Cell) -> str:
    if _star(cell):
        update, insert = "UPDATE SET *", "INSERT *"
    else:
        update = "UPDATE SET " + ", ".join(f"{c} = s.{c}" for c in cell.columns)
        insert = f"INSERT ({', '.join(cell.columns)}) VALUES ({', '.join(f's.{c}' for c in cell.columns)})"
    return (
        f"MERGE INTO {{t}} t USING parquet.`{cell.workdir / 'source'}` s ON t.id = s.id "
        f"WHEN MATCHED AND s.id % 10 = 5 THEN DELETE WHEN MATCHED THEN {update} WHEN NOT MATCHED THEN {insert}"
    )


MERGE = Operation(
    "merge",
    prepare=_merge_source,
    ours=lambda c: [
        "merge", c.ours_path, "--source", str(c.workdir / "source"),
        "--on", "t.id = s.id", "--clauses", json.dumps(_merge_clauses(c)),
    ],
    theirs=lambda c: [_merge_sql(c)],
)  # fmt: skip


@pytest.mark.parametrize(("operation", "feature"), cells(UPDATE, DELETE, MERGE))
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)
