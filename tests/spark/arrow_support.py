"""Helpers for the ``arrow`` I/O tests: Python workers that can run pyarrow,
and what two commits must share to count as the same change."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.operations.dml.dml_support import commit_actions

#: Commit metrics that depend on file sizes or timing, not on the change.
_SIZE_OR_TIME = ("Bytes", "TimeMs")


@pytest.fixture
def arrow_workers(spark, monkeypatch):
    """The shared session's Python workers run this interpreter (pyarrow,
    obstore, this package), as ``spark.pyspark.python`` makes them under
    spark-submit; pip pyspark otherwise starts ``python3`` from PATH."""
    monkeypatch.setattr(spark.sparkContext, "pythonExec", sys.executable)
    return spark


def commit_shape(path: str, version: int | None = None, actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A commit (of the table at ``path``, or ``actions``) without what may
    differ between two I/O modes making the same change: file names, sizes
    and times, and timing metrics."""
    actions = commit_actions(path, version) if actions is None else actions
    adds = sorted(
        (json.dumps(a["add"]["partitionValues"], sort_keys=True), a["add"]["stats"], a["add"]["dataChange"])
        for a in actions
        if "add" in a
    )
    removes = sorted(a["remove"]["path"] for a in actions if "remove" in a)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    metrics = {k: v for k, v in info.get("operationMetrics", {}).items() if not any(w in k for w in _SIZE_OR_TIME)}
    others = sorted(
        json.dumps(_without_times(a), sort_keys=True)
        for a in actions
        if not ({"add", "remove", "commitInfo"} & a.keys())
    )
    return {
        "adds": adds,
        "removes": removes,
        "operation": info["operation"],
        "parameters": info.get("operationParameters"),
        "metrics": metrics,
        "others": others,
    }


def _without_times(action: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(action))
    for body in out.values():
        if isinstance(body, dict):
            body.pop("createdTime", None)
            body.pop("id", None)
    return out
