"""The interop matrix (:mod:`.matrix`) for APPEND: a plain append, an overwrite, and the two schema changes.

delta-spark's twin is ``INSERT INTO``/``INSERT OVERWRITE`` for the plain
ones and the DataFrame writer (over Connect) with ``mergeSchema`` or
``overwriteSchema``, as those are writer options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.delta_spark.matrix import Cell, Operation, cells, run_cell, write_source


def _source(**columns: str | None) -> Callable[[Any, Cell], None]:
    """A ``prepare`` writing the source: ids 40-49, with ``columns`` changed or added."""
    return lambda oracle, c: write_source(oracle, c.feature, c.workdir / "source", range(40, 50), **columns)


def _ours(*flags: str) -> Callable[[Cell], list[str]]:
    return lambda c: ["append", c.ours_path, "--source", str(c.workdir / "source"), "--format", "parquet", *flags]


def _insert(verb: str) -> Callable[[Cell], list[str]]:
    def theirs(c: Cell) -> list[str]:
        cols = ", ".join(c.columns)
        return [f"INSERT {verb} {{t}} ({cols}) SELECT {cols} FROM parquet.`{c.workdir / 'source'}`"]

    return theirs


def _writer(mode: str, option: str) -> Callable[[Cell], list[Callable[[Any], Any]]]:
    """The DataFrame writer over Connect, with ``option`` set."""

    def theirs(c: Cell) -> list[Callable[[Any], Any]]:
        def write(oracle: Any) -> None:
            frame = oracle.session.read.parquet(str(c.workdir / "source"))
            frame.write.format("delta").mode(mode).option(option, "true").save(c.twin_path)

        return [write]

    return theirs


APPEND = Operation("append", prepare=_source(), ours=_ours(), theirs=_insert("INTO"))
OVERWRITE = Operation(
    "append_overwrite", prepare=_source(), ours=_ours("--mode", "overwrite"), theirs=_insert("OVERWRITE")
)
#: A new column, appended with schema evolution.
MERGE_SCHEMA = Operation(
    "append_merge_schema",
    prepare=_source(extra="id * 10"),
    ours=_ours("--merge-schema"),
    theirs=_writer("append", "mergeSchema"),
)
#: A new schema: the note column dropped, a new one added.
OVERWRITE_SCHEMA = Operation(
    "append_overwrite_schema",
    prepare=lambda oracle, c: _source(**{c.columns[4]: None, "extra": "id * 10"})(oracle, c),
    ours=_ours("--mode", "overwrite", "--overwrite-schema"),
    theirs=_writer("overwrite", "overwriteSchema"),
)


@pytest.mark.parametrize(("operation", "feature"), cells(APPEND, OVERWRITE, MERGE_SCHEMA, OVERWRITE_SCHEMA))
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)
