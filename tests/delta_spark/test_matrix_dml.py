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


#: A matched delete, a matched update and a not-matched insert in one MERGE.
MERGE_CLAUSES = [
    {"when": "matched", "condition": "s.id % 10 = 5", "delete": True},
    {"when": "matched", "update": "*"},
    {"when": "not_matched", "insert": "*"},
]
MERGE = Operation(
    "merge",
    prepare=_merge_source,
    skip=lambda f: (
        "delta-spark 4.4 refuses this MERGE at analysis on a GENERATED ALWAYS identity column while we "
        "commit it: open, to be examined"
        if f.name == "identity_columns"
        else None
    ),
    ours=lambda c: [
        "merge", c.ours_path, "--source", str(c.workdir / "source"),
        "--on", "t.id = s.id", "--clauses", json.dumps(MERGE_CLAUSES),
    ],
    theirs=lambda c: [
        f"MERGE INTO {{t}} t USING parquet.`{c.workdir / 'source'}` s ON t.id = s.id "
        "WHEN MATCHED AND s.id % 10 = 5 THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ],
)


@pytest.mark.parametrize(("operation", "feature"), cells(UPDATE, DELETE, MERGE))
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)
