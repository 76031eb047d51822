"""The vendored delta-spark 4.4 tables still get the answers recorded for them.

``tests/golden-4.4`` holds tables delta-spark made and its answers about
them; the core's and the Spark readers' tests compare with those answers
without a JVM. Here the live oracle reads each table again (a copy, so the
vendored bytes stay as they are) and must answer the same: a checkout that
lost a file, an edited answer, or a Delta upgrade that reads a table
differently fails here. Commit times are left out but where in-commit
timestamps make them part of the log: delta-spark otherwise takes them from
the files' mtimes, which a checkout resets. Only the latest version's rows
are read again, to keep the test short.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.delta_spark.golden_4_4 import GOLDEN_44_DIR, RECIPES, load_expected, record


def _comparable(answers: dict) -> dict:
    """The answers but the older versions' rows (the core's tests count them)
    and, without in-commit timestamps, the commit times."""
    latest = str(answers["version"])
    answers = {**answers, "rows": {latest: answers["rows"][latest]}}
    if answers["detail"]["properties"].get("delta.enableInCommitTimestamps") == "true":
        return answers
    return {**answers, "history": [{**h, "timestamp": None} for h in answers["history"]]}


@pytest.mark.parametrize("recipe", [pytest.param(r, id=r.name) for r in RECIPES])
def test_delta_spark_reads_the_vendored_table_as_recorded(delta_spark, recipe, tmp_path: Path) -> None:
    copy = tmp_path / recipe.name
    shutil.copytree(GOLDEN_44_DIR / recipe.name, copy)
    live = record(delta_spark, recipe, copy, every_version=False)
    assert _comparable(live) == _comparable(load_expected(recipe.name))
