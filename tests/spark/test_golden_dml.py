"""Every golden table we can read, we can change (issue 44, item 5): DELETE, UPDATE, APPEND and OPTIMIZE.

One test per table of ``tests/golden``, ``tests/golden-4.4`` and ``tests/delta-rs``
(in CI one table of each kind, :data:`~tests.golden_dml.CI_TABLES`; ``GOLDEN_DML_ALL=1``: all)
(:mod:`tests.golden_dml` runs the operations on a copy and checks each against
a model of its rows and, where delta-rs can run it too, against delta-rs on a
twin). An operation either changes the table as expected, has nothing to change,
or is refused with an ``UnsupportedFeatureError`` naming the feature that stops
it, the table untouched. The last test prints the summary
(``python -m tests.golden_dml`` prints it without pytest).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.golden_dml import CI_TABLES, KNOWN_ERRORS, TableReport, run_table, summary, table_names

_REPORTS: list[TableReport] = []
#: Every table with ``GOLDEN_DML_ALL=1`` (about ten seconds a table on two cores); else one of each kind.
_TABLES = [t for t in table_names() if os.environ.get("GOLDEN_DML_ALL") or t in CI_TABLES]


@pytest.mark.parametrize(("corpus", "name"), [pytest.param(c, n, id=f"{c}/{n}") for c, n in _TABLES])
def test_golden_table_changes_or_refuses_by_feature(spark, corpus: str, name: str, tmp_path: Path) -> None:
    report = run_table(spark, corpus, name, tmp_path)
    _REPORTS.append(report)
    if (corpus, name) in CI_TABLES:
        assert not report.unreadable, report.unreadable  # each was picked as one we read
    errors = {
        op: o.detail
        for op, o in report.outcomes.items()
        if o.status == "error" and (corpus, name, op) not in KNOWN_ERRORS
    }
    assert not errors, errors
    for op, o in report.outcomes.items():
        if o.status == "refused":
            assert o.detail, op  # the feature's name


def test_summary() -> None:
    """The closing note's numbers (run with ``-s`` to see them)."""
    if not _REPORTS:
        pytest.skip("no table ran")
    print("\n" + summary(_REPORTS))
