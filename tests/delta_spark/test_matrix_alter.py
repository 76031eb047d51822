"""The interop matrix (:mod:`.matrix`) for ALTER: add, rename and drop a column, set properties, add a CHECK constraint.

RENAME and DROP COLUMN need column mapping: on a table without it both sides
refuse them (we turn mapping on only when asked, with ``--enable-column-mapping``),
and the cell asserts both refusals.
"""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.spark.cli import execute, parse_request
from tests.delta_spark.matrix import FEATURES, Cell, Operation, Seeds, cells, run_cell, table
from tests.delta_spark.matrix import feature as named


def _alter(change: dict) -> object:
    return lambda c: ["alter", c.ours_path, "--change", json.dumps(change)]


def _mapped(f) -> bool:
    return f.properties.get("delta.columnMapping.mode") in ("name", "id")


ADD_COLUMN = Operation(
    "add_column",
    ours=_alter({"add_columns": [{"name": "extra", "type": "string"}]}),
    theirs=lambda c: ["ALTER TABLE {t} ADD COLUMNS (extra STRING)"],
)
RENAME_COLUMN = Operation(
    "rename_column",
    ours=_alter({"rename_column": {"column": "v", "to": "v2"}}),
    theirs=lambda c: ["ALTER TABLE {t} RENAME COLUMN v TO v2"],
    skip=lambda f: None if _mapped(f) else "no column mapping: both refuse (test_refused)",
)
DROP_COLUMN = Operation(
    "drop_column",
    ours=_alter({"drop_columns": ["v"]}),
    theirs=lambda c: ["ALTER TABLE {t} DROP COLUMN v"],
    skip=lambda f: None if _mapped(f) else "no column mapping: both refuse (test_refused)",
)
SET_PROPERTIES = Operation(
    "set_properties",
    ours=_alter({"set_properties": {"delta.logRetentionDuration": "interval 60 days", "team": "data"}}),
    theirs=lambda c: [
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'team' = 'data')"
    ],
)
ADD_CONSTRAINT = Operation(
    "add_constraint",
    ours=_alter({"add_constraint": {"name": "id_nonneg", "expression": "id >= 0"}}),
    theirs=lambda c: ["ALTER TABLE {t} ADD CONSTRAINT id_nonneg CHECK (id >= 0)"],
)


@pytest.mark.parametrize(
    ("operation", "feature"), cells(ADD_COLUMN, RENAME_COLUMN, DROP_COLUMN, SET_PROPERTIES, ADD_CONSTRAINT)
)
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)


@pytest.mark.parametrize("feature", [f.name for f in FEATURES if not _mapped(f)])
@pytest.mark.parametrize("operation", [RENAME_COLUMN, DROP_COLUMN], ids=lambda o: o.name)
def test_refused(operation, feature, delta_spark, spark, seeds: Seeds, tmp_path):
    """Without column mapping, RENAME and DROP COLUMN are refused by both, and the table is left as it was."""
    path = seeds.copy(feature, tmp_path / "t")
    before = seeds.version(feature)
    cell = Cell(named(feature), path, path, tmp_path)
    with pytest.raises(DeltaError, match=r"(?i)column mapping"):
        execute(parse_request(operation.ours(cell)), spark)
    # delta-spark names a CHECK constraint or generated column that uses v before it asks for mapping.
    with pytest.raises(Exception, match=r"(?i)column mapping|_DEPENDENT_COLUMN_CHANGE"):
        delta_spark.sql(operation.theirs(cell)[0].format(t=table(path)))
    assert delta_spark.history(path)[-1]["version"] == before
