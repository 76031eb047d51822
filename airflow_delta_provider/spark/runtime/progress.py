"""Progress lines for long Spark jobs, while one command runs.

A task log should say that a long job is moving without showing Spark's
INFO records (the hook quiets those). So while a command runs, its Spark
work is watched and, once Spark has been busy for a whole interval, one line
is reported every interval while stages run::

    progress: stage 3 (save at NativeMethodAccessorImpl.java:0), 45/200 tasks, 0:00:23
    progress: stages 7, 8, 12/40 tasks, 0:01:05

with the running stages (id, and name where Spark gives one), their tasks
done out of their total, and the time since the command started. A job
shorter than the interval prints nothing.

Spark is "busy" from the first poll that sees a running stage until it has
been idle for a whole interval: one operation is several jobs (a scan, then
the rewrite), each of a few stages, with short idle gaps between them that
adaptive query execution and the driver's own work make. Those gaps must not
restart the count, or an operation whose stages each last a few seconds
would never print a line, however long it runs.

- **Classic session** (spark-submit, the local CLI): a daemon thread polls
  the SparkContext's status tracker (``getActiveStageIds``, ``getStageInfo``)
  ten times per interval. It is stopped and joined when the command ends.
- **Spark Connect**: no SparkContext here; the server streams progress
  reports with each operation (every ``spark.connect.progress.reportInterval``,
  2 s by default), and a progress handler registered on the session for the
  command's duration turns them into the same lines. Connect's reports carry
  no stage names.

The interval is :data:`DEFAULT_PROGRESS_INTERVAL_S` seconds, or the number
of seconds in the :data:`PROGRESS_INTERVAL_VARIABLE` environment variable of
the driver (the Airflow worker over Spark Connect); ``0`` turns the lines off.
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.spark.runtime.progress_line import PROGRESS_PREFIX

#: Seconds between two progress lines, and how long stages must run before the first.
DEFAULT_PROGRESS_INTERVAL_S = 10.0
#: The environment variable that sets the interval in seconds (``0``: no progress lines).
PROGRESS_INTERVAL_VARIABLE = "DELTA_PROGRESS_INTERVAL"
#: How often per interval the classic status tracker is polled: a job is
#: seen to have run the whole interval within a tenth of it.
_POLLS_PER_INTERVAL = 10

#: Where the lines go: a printer (the CLI: stderr) or a logger's ``info`` (in process).
Report = Callable[[str], None]


@dataclass(frozen=True)
class StageProgress:
    """One running stage: its id, its name if known, its tasks done and in all."""

    stage_id: int
    completed_tasks: int
    tasks: int
    name: str | None = None


def progress_interval(environ: Mapping[str, str] | None = None) -> float:
    """The interval in seconds, from :data:`PROGRESS_INTERVAL_VARIABLE` of ``environ``
    (default ``os.environ``), else :data:`DEFAULT_PROGRESS_INTERVAL_S`."""
    text = (os.environ if environ is None else environ).get(PROGRESS_INTERVAL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_PROGRESS_INTERVAL_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):  # also refuses nan
        raise InvalidInputError(
            f"{PROGRESS_INTERVAL_VARIABLE} must be a number of seconds (0 turns progress lines off), not {text!r}"
        )
    return seconds


def format_progress(stages: Sequence[StageProgress], elapsed_s: float) -> str:
    """One progress line for the running ``stages``, ``elapsed_s`` seconds into the command."""
    labels = [f"{s.stage_id} ({s.name})" if s.name else str(s.stage_id) for s in stages]
    which = f"stage {labels[0]}" if len(labels) == 1 else f"stages {', '.join(labels)}"
    done = sum(s.completed_tasks for s in stages)
    total = sum(s.tasks for s in stages)
    return f"{PROGRESS_PREFIX}{which}, {done}/{total} tasks, {timedelta(seconds=int(elapsed_s))}"


class ProgressThrottle:
    """Decides when a progress line is due: Spark has been busy for a whole
    interval (idle gaps shorter than the interval do not end a busy spell),
    stages run now, and the last line is an interval old.

    :param clock: Seconds, monotonic (a test's fake clock).
    """

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._started = clock()
        self._busy_since: float | None = None
        self._last_busy: float | None = None
        self._last_line: float | None = None

    def observe(self, stages: Sequence[StageProgress]) -> str | None:
        """Take note of the stages running now (none: Spark is idle); the line to report, if one is due."""
        now = self._clock()
        if self._last_busy is not None and now - self._last_busy >= self.interval_s:
            self._busy_since = self._last_busy = self._last_line = None  # idle a whole interval: the spell ended
        if not stages:
            return None
        if self._busy_since is None:
            self._busy_since = now
        self._last_busy = now
        due = max(self._busy_since, self._last_line or self._busy_since) + self.interval_s
        if now < due:
            return None
        self._last_line = now
        return format_progress(sorted(stages, key=lambda s: s.stage_id), now - self._started)


class Heartbeat:
    """A line for each interval in which a running command said nothing.

    Progress lines come only while Spark's stages run; a JVM starting, a session
    being built, or the driver reading the log and committing say nothing for as
    long. A watcher of the command's output (the spark-submit hook, the in-process
    hook) calls :meth:`heard` for each line it shows; a daemon thread reports
    ``progress: still running (nothing said for 0:00:10), 0:00:40`` once a whole
    interval has passed without one, so that a task log is never silent for more
    than an interval. Used as a context manager: no thread outlives the block.
    """

    def __init__(self, report: Report, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._report = report
        self._clock = clock
        self._started = self._last = clock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="delta-heartbeat", daemon=True)

    def heard(self) -> None:
        """The command said something: the silence starts again."""
        self._last = self._clock()

    def due(self) -> str | None:
        """The line to report now, if a whole interval has passed in silence."""
        now = self._clock()
        if self.interval_s <= 0 or now - self._last < self.interval_s:
            return None
        silent, self._last = now - self._last, now
        quiet, elapsed = timedelta(seconds=int(silent)), timedelta(seconds=int(now - self._started))
        return f"{PROGRESS_PREFIX}still running (nothing said for {quiet}), {elapsed}"

    def __enter__(self) -> Heartbeat:
        if self.interval_s > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _beat(self) -> None:
        while not self._stopped.wait(self.interval_s / _POLLS_PER_INTERVAL):
            line = self.due()
            if line is not None and not self._stopped.is_set():
                self._report(line)


def tracker_stages(tracker: Any) -> list[StageProgress]:
    """The running stages, as PySpark's ``StatusTracker`` (classic sessions) reports them."""
    stages = []
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:  # ended between the two calls
            stages.append(StageProgress(stage_id, info.numCompletedTasks, info.numTasks, short_stage_name(info.name)))
    return stages


def short_stage_name(name: str | None) -> str | None:
    """A stage's name (its call site, ``collect at /long/path/scan.py:217``) with
    the file's folders dropped: ``collect at scan.py:217``."""
    if not name:
        return None
    action, at, place = name.rpartition(" at ")
    return f"{action}{at}{posixpath.basename(place)}" if at else name


class _TrackerPoller:
    """A daemon thread that polls a status tracker until stopped."""

    def __init__(self, tracker: Any, throttle: ProgressThrottle, report: Report) -> None:
        self._tracker = tracker
        self._throttle = throttle
        self._report = report
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="delta-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _poll(self) -> None:
        period = self._throttle.interval_s / _POLLS_PER_INTERVAL
        while not self._stopped.wait(period):
            try:
                stages = tracker_stages(self._tracker)
            except Exception:  # the context stopping under us: the command reports its own failure
                return
            line = self._throttle.observe(stages)
            if line is not None and not self._stopped.is_set():
                self._report(line)


class ConnectProgressHandler:
    """A Spark Connect progress handler (``SparkSession.registerProgressHandler``)
    that reports through a :class:`ProgressThrottle`.

    Connect calls it with each progress report of an operation, and once more
    with ``done=True`` when the operation ends; an ended operation is idle time.
    """

    def __init__(self, throttle: ProgressThrottle, report: Report) -> None:
        self._throttle = throttle
        self._report = report

    def __call__(self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        running = [] if done else [s for s in stages or () if not s.done]
        line = self._throttle.observe([StageProgress(s.stage_id, s.num_completed_tasks, s.num_tasks) for s in running])
        if line is not None:
            self._report(line)


@contextmanager
def reporting_progress(spark: Any, report: Report | None, interval_s: float | None = None) -> Iterator[None]:
    """Report progress lines of ``spark``'s jobs while the block runs.

    Nothing is watched without a session (a command that needs no Spark),
    without ``report``, or with an interval of 0. ``interval_s`` defaults to
    :func:`progress_interval`. No thread or handler outlives the block.
    """
    interval_s = progress_interval() if interval_s is None else interval_s
    if spark is None or report is None or interval_s <= 0:
        yield
        return
    # Imported here: the CLI, which imports this module, runs the commands that need no Spark without pyspark.
    from airflow_delta_provider.spark.runtime.session import is_connect

    throttle = ProgressThrottle(interval_s)
    if is_connect(spark):
        handler = ConnectProgressHandler(throttle, report)
        spark.registerProgressHandler(handler)
        try:
            yield
        finally:
            spark.removeProgressHandler(handler)
        return
    poller = _TrackerPoller(spark.sparkContext.statusTracker(), throttle, report)
    poller.start()
    try:
        yield
    finally:
        poller.stop()


__all__ = [
    "DEFAULT_PROGRESS_INTERVAL_S",
    "PROGRESS_INTERVAL_VARIABLE",
    "ConnectProgressHandler",
    "Heartbeat",
    "ProgressThrottle",
    "Report",
    "StageProgress",
    "format_progress",
    "progress_interval",
    "reporting_progress",
    "short_stage_name",
    "tracker_stages",
]
