"""Running one operation of ours in the test process, as spark-submit would.

New tests drive operations through the Spark CLI's entry point only
(:func:`airflow_delta_provider.spark.cli.parse_request` and
:func:`~airflow_delta_provider.spark.cli.execute`), never through the command
or request modules, whose layout changes: this module is the one place to
adapt when the CLI's calling convention does.
"""

from __future__ import annotations

from typing import Any


def run(spark: Any, *argv: str) -> Any:
    """Run the operation ``argv`` describes (``["update", TABLE, "--condition", ...]``)
    on ``spark``; its result (``.version``, ``.metrics``, ``.operation``)."""
    from airflow_delta_provider.spark.cli import execute, parse_request

    return execute(parse_request([str(a) for a in argv]), spark)


def version_of(result: Any) -> int | None:
    """The version an operation committed (None: it committed nothing)."""
    return getattr(result, "version", None)


def metrics_of(result: Any) -> dict[str, Any]:
    """The operation's metrics, delta-spark's names."""
    return dict(getattr(result, "metrics", None) or {})
