"""The Spark readers on tables delta-spark 4.4 wrote (``tests/golden-4.4``).

Rows are compared as Spark's own JSON of each row (``to_json`` in UTC), the
form in which delta-spark's rows were recorded when the tables were made
(:mod:`tests.delta_spark.golden_4_4`): same Spark, same rendering of every
type, variants included.

* :func:`scan`, in both I/O modes, gives the rows delta-spark reads at the
  latest version (deletion vectors applied, mapped columns renamed, widened
  columns read as their new type, partition values typed);
* on row tracking tables, each row's ``_metadata.row_id`` and
  ``row_commit_version`` are delta-spark's;
* where the change data feed is on, :func:`read_changes` from version 0 gives
  delta-spark's ``table_changes`` (but the commit time: delta-spark takes it
  from the commit file's mtime, which a checkout resets).
"""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.read.scan import scan
from airflow_delta_provider.spark.read.table_changes import read_changes
from tests.delta_spark.golden_4_4 import GOLDEN_44_DIR, RECIPES, json_rows, load_expected
from tests.spark.arrow_support import arrow_workers  # noqa: F401 - the fixture

#: The Python workers of the ``arrow`` mode run this interpreter.
pytestmark = pytest.mark.usefixtures("arrow_workers")

IO_MODES = ("hadoop", "arrow")


@pytest.mark.parametrize("io", IO_MODES)
@pytest.mark.parametrize("name", [pytest.param(r.name, id=r.name) for r in RECIPES])
def test_scan_gives_the_rows_delta_spark_reads(spark, name: str, io: str) -> None:
    expected = load_expected(name)
    snap = DeltaTable(str(GOLDEN_44_DIR / name)).snapshot()
    frame = scan(spark, snap, io=io)
    assert frame.columns == [f["name"] for f in expected["schema"]["fields"]]
    assert json_rows(frame) == expected["rows"][str(snap.version)]


@pytest.mark.parametrize("io", IO_MODES)
@pytest.mark.parametrize("name", [pytest.param(r.name, id=r.name) for r in RECIPES if r.row_tracking])
def test_row_ids_are_delta_sparks(spark, name: str, io: str) -> None:
    snap = DeltaTable(str(GOLDEN_44_DIR / name)).snapshot()
    frame = scan(spark, snap, io=io, row_tracking=True)
    columns = [c for c in frame.columns if c != "_metadata"]
    tracked = frame.selectExpr(
        *[f"`{c}`" for c in columns], "_metadata.row_id AS row_id", "_metadata.row_commit_version AS row_commit_version"
    )
    assert json_rows(tracked) == load_expected(name)["row_tracking"]


@pytest.mark.parametrize("io", IO_MODES)
@pytest.mark.parametrize("name", [pytest.param(r.name, id=r.name) for r in RECIPES if r.cdf])
def test_changes_are_delta_sparks_table_changes(spark, name: str, io: str) -> None:
    """Including a DELETE with deletion vectors, which writes no change
    data: its deleted rows are the difference of the file's two vectors."""
    frame = read_changes(spark, str(GOLDEN_44_DIR / name), 0, io=io).frame
    assert frame.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    assert json_rows(frame.drop("_commit_timestamp")) == load_expected(name)["changes"]
