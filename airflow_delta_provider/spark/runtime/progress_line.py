"""The Spark application's progress line: how it starts, defined once.

The application (:mod:`airflow_delta_provider.spark.runtime.progress`) writes
it while a long job runs; the spark-submit hook reads the application's
output line by line and must show it at INFO, not mistake it for one of
Spark's own INFO records (which it quiets) or for a problem worth quoting in
a failed task's error. Both take the prefix from here, the layer both may
import.
"""

from __future__ import annotations

#: How every progress line starts: ``progress: stage 3 (...), 45/200 tasks, 0:00:23``.
PROGRESS_PREFIX = "progress: "


def is_progress_line(line: str) -> bool:
    """Whether ``line`` (one line of the application's output) is a progress line."""
    return line.startswith(PROGRESS_PREFIX)


__all__ = ["PROGRESS_PREFIX", "is_progress_line"]
