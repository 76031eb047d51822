"""Progress lines for long jobs: the line, the rate limit, the interval's knob,
and real long UPDATEs on the classic session (the status tracker) and over a
real Spark Connect server (Connect's progress handler).

The real jobs are made long with a condition that sleeps per row, and the
interval is lowered to half a second through its environment variable; the
tests count lines, they never time anything.
"""

from __future__ import annotations

import re
import threading

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.spark.cli import build_parser, execute
from airflow_delta_provider.spark.in_process import InProcessCommand
from airflow_delta_provider.spark.runtime.progress import (
    DEFAULT_PROGRESS_INTERVAL_S,
    PROGRESS_INTERVAL_VARIABLE,
    ConnectProgressHandler,
    ProgressThrottle,
    StageProgress,
    format_progress,
    progress_interval,
    reporting_progress,
    short_stage_name,
)
from airflow_delta_provider.spark.runtime.progress_line import is_progress_line
from tests.spark.test_in_process import SLOW, _twins

#: A progress line: the stage (its name where Spark gives one), tasks done out of all, the time so far.
LINE = re.compile(
    r"^progress: stages? \d+(?: \([^)]+\))?(?:, \d+(?: \([^)]+\))?)*, (?P<done>\d+)/(?P<total>\d+) tasks, \d+:\d\d:\d\d$"
)
#: The lowered interval the real jobs are watched with, in seconds.
SHORT_INTERVAL = "0.5"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "delta-progress"]


def test_a_line_names_the_running_stages_their_tasks_and_the_time_so_far() -> None:
    one = format_progress([StageProgress(3, 45, 200, "save at NativeMethodAccessorImpl.java:0")], 23.9)
    assert one == "progress: stage 3 (save at NativeMethodAccessorImpl.java:0), 45/200 tasks, 0:00:23"
    two = format_progress([StageProgress(7, 10, 20), StageProgress(8, 2, 20)], 3725)
    assert two == "progress: stages 7, 8, 12/40 tasks, 1:02:05"
    assert LINE.match(one) and LINE.match(two) and is_progress_line(one)


def test_a_stage_name_keeps_its_file_but_not_the_files_folders() -> None:
    zipped = "collect at /root/.cache/airflow-delta-provider/p.zip/airflow_delta_provider/spark/read/scan.py:217"
    assert short_stage_name(zipped) == "collect at scan.py:217"
    assert (
        short_stage_name("parquet at NativeMethodAccessorImpl.java:0") == "parquet at NativeMethodAccessorImpl.java:0"
    )
    assert short_stage_name("no call site") == "no call site"
    assert short_stage_name("") is None


def test_lines_come_at_most_once_an_interval_and_not_for_short_jobs() -> None:
    clock = FakeClock()
    throttle = ProgressThrottle(10, clock)
    stage = [StageProgress(1, 0, 4)]
    seen = []
    # A 9 s job: nothing. Then idle, then a job polled every 2 s for 40 s.
    for t, stages in [(0, stage), (9, stage), (9.5, []), (12, stage), *((12 + s, stage) for s in range(2, 42, 2))]:
        clock.now = 100.0 + t
        line = throttle.observe(stages)
        if line is not None:
            seen.append((t, line))
    assert [t for t, _ in seen] == [22, 32, 42, 52]  # 10 s into the job, then every 10 s
    assert seen[0][1] == "progress: stage 1, 0/4 tasks, 0:00:22"


def test_connects_done_call_ends_a_job_and_done_stages_are_not_shown() -> None:
    from pyspark.sql.connect.shell.progress import StageInfo

    clock = FakeClock()
    lines: list[str] = []
    handler = ConnectProgressHandler(ProgressThrottle(1, clock), lines.append)
    finished = StageInfo(stage_id=1, num_tasks=2, num_completed_tasks=2, num_bytes_read=0, done=True)
    running = StageInfo(stage_id=2, num_tasks=4, num_completed_tasks=1, num_bytes_read=0, done=False)
    for t, done in [(0, False), (0.5, True), (0.8, False), (1.5, False), (2.0, False)]:
        clock.now = 100.0 + t
        handler(stages=[finished, running], inflight_tasks=2, operation_id="op", done=done)
    assert lines == ["progress: stage 2, 1/4 tasks, 0:00:02"]  # the job seen from 0.8 s, not from 0 s


def test_the_interval_comes_from_the_environment() -> None:
    assert progress_interval({}) == DEFAULT_PROGRESS_INTERVAL_S == 10
    assert progress_interval({PROGRESS_INTERVAL_VARIABLE: " 2.5 "}) == 2.5
    assert progress_interval({PROGRESS_INTERVAL_VARIABLE: "0"}) == 0
    for bad in ("ten", "-1", "nan", "inf"):
        with pytest.raises(InvalidInputError, match=f"{PROGRESS_INTERVAL_VARIABLE} must be a number of seconds"):
            progress_interval({PROGRESS_INTERVAL_VARIABLE: bad})


def test_a_long_update_on_a_classic_session_reports_progress(spark, tmp_path, monkeypatch) -> None:
    """The status tracker, polled while a real UPDATE runs (100 rows, 20 ms each)."""
    table, _ = _twins(tmp_path, rows=100)
    monkeypatch.setenv(PROGRESS_INTERVAL_VARIABLE, SHORT_INTERVAL)
    lines: list[str] = []
    argv = ["update", table, "--condition", SLOW, "--set", "val = upper(val)"]
    result = execute(build_parser().parse_args(argv), spark, report_progress=lines.append)

    assert result.version == 4  # four appends made the table
    assert lines, "no progress line for a job longer than the interval"
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert " (" in line  # classic stages have names
        assert 0 <= int(match["done"]) <= int(match["total"])
    assert _progress_threads() == []  # the poller ended with the command


def test_a_job_shorter_than_the_interval_reports_nothing(spark) -> None:
    lines: list[str] = []
    with reporting_progress(spark, lines.append, interval_s=3600):
        assert spark.range(10).count() == 10
    with reporting_progress(spark, lines.append, interval_s=0):  # 0: off, no thread at all
        assert _progress_threads() == []
    assert lines == []


def test_a_long_update_over_spark_connect_reports_progress(spark_connect, tmp_path, monkeypatch) -> None:
    """Connect's progress reports (the server sends one every 2 s while a job runs) for a real UPDATE."""
    _, table = _twins(tmp_path, rows=100)
    monkeypatch.setenv(PROGRESS_INTERVAL_VARIABLE, SHORT_INTERVAL)
    lines: list[str] = []
    argv = ["update", table, "--condition", SLOW, "--set", "val = upper(val)"]
    command = InProcessCommand(
        argv,
        remote=spark_connect.url,
        report_progress=lines.append,
        conf={"spark.connect.progress.reportInterval": "200ms"},
    )
    assert command.run()["version"] == 4

    assert lines, "no progress line for a job longer than the interval"
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert 0 <= int(match["done"]) <= int(match["total"])
