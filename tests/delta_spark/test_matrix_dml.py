"""The interop matrix (:mod:`.matrix`) for UPDATE and DELETE."""

from __future__ import annotations

import pytest

from tests.delta_spark.matrix import Operation, cells, run_cell

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


@pytest.mark.parametrize(("operation", "feature"), cells(UPDATE, DELETE))
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)
