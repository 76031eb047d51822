"""Progress lines for long jobs: the line, the rate limit, the interval's knob,
and real long UPDATEs on the classic session (the status tracker) and over a
real Spark Connect server (Connect's progress handler).

The real jobs are made long with a condition that sleeps per row (the
classic one at an interval lowered to half a second through its environment
variable, the Connect one at the default interval; the spark-submit form's
test in tests/spark/test_cli.py is at the default interval too); the tests
count lines, they never time anything.
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
    Heartbeat,
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
    # A 9 s job, then idle for longer than the interval: nothing. Then a job polled every 2 s for 40 s.
    for t, stages in [(0, stage), (9, stage), (9.5, []), (20, []), *((22 + s, stage) for s in range(0, 42, 2))]:
        clock.now = 100.0 + t
        line = throttle.observe(stages)
        if line is not None:
            seen.append((t, line))
    assert [t for t, _ in seen] == [32, 42, 52, 62]  # 10 s into the job, then every 10 s
    assert seen[0][1] == "progress: stage 1, 0/4 tasks, 0:00:32"


def test_short_idle_gaps_between_stages_do_not_restart_the_count() -> None:
    """An operation is several jobs of short stages with idle gaps between them (adaptive query
    execution, the driver's own work): a line every interval all the same, from the first stage on;
    a line due in a gap comes at the next poll that sees a stage."""
    clock = FakeClock()
    throttle = ProgressThrottle(10, clock)
    seen = []
    for t in range(0, 46):  # polled every second: stages of 4 s, each followed by a 1 s gap
        clock.now = 100.0 + t
        running = [] if t % 5 == 4 else [StageProgress(t // 5, t % 5, 4)]
        if throttle.observe(running) is not None:
            seen.append(t)
    assert seen == [10, 20, 30, 40]
    clock.now = 100.0 + 49  # a line due in a gap: at the next poll that sees a stage
    assert throttle.observe([]) is None
    clock.now = 100.0 + 50.5
    assert throttle.observe([StageProgress(10, 0, 4)]) == "progress: stage 10, 0/4 tasks, 0:00:50"


def test_a_heartbeat_speaks_once_an_interval_of_silence_and_only_then() -> None:
    clock = FakeClock()
    heartbeat = Heartbeat(lambda line: None, 10.0, clock)
    clock.now += 9
    assert heartbeat.due() is None
    heartbeat.heard()  # a line was shown: the silence starts again
    clock.now += 9
    assert heartbeat.due() is None
    clock.now += 1
    assert heartbeat.due() == "progress: still running (nothing said for 0:00:10), 0:00:19"
    assert heartbeat.due() is None  # its own line ends the silence too
    clock.now += 10
    assert heartbeat.due() == "progress: still running (nothing said for 0:00:10), 0:00:29"
    assert Heartbeat(lambda line: None, 0.0, clock).due() is None  # an interval of 0: off


def test_a_heartbeats_thread_reports_and_ends_with_its_block() -> None:
    lines: list[str] = []
    with Heartbeat(lines.append, 0.05):
        deadline = threading.Event()
        while not lines and not deadline.wait(0.01):
            pass
    assert lines[0].startswith("progress: still running")
    assert not [t for t in threading.enumerate() if t.name == "delta-heartbeat"]


def test_connects_done_call_ends_a_job_and_done_stages_are_not_shown() -> None:
    from pyspark.sql.connect.shell.progress import StageInfo

    clock = FakeClock()
    lines: list[str] = []
    handler = ConnectProgressHandler(ProgressThrottle(1, clock), lines.append)
    finished = StageInfo(stage_id=1, num_tasks=2, num_completed_tasks=2, num_bytes_read=0, done=True)
    running = StageInfo(stage_id=2, num_tasks=4, num_completed_tasks=1, num_bytes_read=0, done=False)
    for t, done in [(0, False), (0.5, True), (1.6, False), (2.0, False), (2.7, False)]:
        clock.now = 100.0 + t
        handler(stages=[finished, running], inflight_tasks=2, operation_id="op", done=done)
    # Idle from 0 s (done at 0.5 s) for a whole interval: the job seen from 1.6 s, not from 0 s.
    assert lines == ["progress: stage 2, 1/4 tasks, 0:00:02"]


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


def test_a_long_update_over_spark_connect_reports_progress_at_the_default_interval(
    spark_connect, tmp_path, monkeypatch
) -> None:
    """Connect's progress reports (the server sends one every 2 s while a job runs) for a real
    UPDATE of two jobs of 12.5 s each (100 rows sleeping 250 ms, two cores): at the default
    interval of 10 s, at least two lines."""
    _, table = _twins(tmp_path, rows=100)
    monkeypatch.delenv(PROGRESS_INTERVAL_VARIABLE, raising=False)
    lines: list[str] = []
    slow = SLOW.replace("cast(20 as bigint)", "cast(250 as bigint)")
    argv = ["update", table, "--condition", slow, "--set", "val = upper(val)"]
    command = InProcessCommand(argv, remote=spark_connect.url, report_progress=lines.append)
    assert command.run()["version"] == 4

    assert len(lines) >= 2, lines
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert 0 <= int(match["done"]) <= int(match["total"])
