"""Outage: one warning when a poller's store starts failing, one line when it answers again."""

from __future__ import annotations

import logging

import pytest

from airflow_delta_provider.delta.errors import (
    CorruptLogError,
    StorageAccessDeniedError,
    StorageError,
    StorageNotFoundError,
)
from airflow_delta_provider.delta.watch.outage import Outage, is_transient_failure


def test_transient_failures_are_store_errors_that_may_pass():
    assert is_transient_failure(StorageError("503 Slow Down"))
    assert is_transient_failure(ConnectionResetError())
    assert is_transient_failure(TimeoutError())
    for permanent in (StorageAccessDeniedError("403"), StorageNotFoundError("no bucket"), CorruptLogError("bad"),
                      FileNotFoundError("gone"), ValueError("bug")):  # fmt: skip
        assert not is_transient_failure(permanent)


def test_one_warning_per_outage_and_one_line_when_it_ends(caplog):
    outage = Outage(logging.getLogger("poller"), "s3://b/t")
    polls = ["ok", "503", "503", "503", "ok", "ok", "503", "ok"]
    with caplog.at_level(logging.INFO, logger="poller"):
        for poll in polls:
            with outage.polling():
                if poll == "503":
                    raise StorageError("reading s3://b/t/_delta_log failed: 503")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 == outage.outages
    assert all("s3://b/t" in r.getMessage() and "503" in r.getMessage() for r in warnings)
    recovered = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
    assert [m.split("after ")[1].split(" failed")[0] for m in recovered] == ["3", "1"]
    assert outage.failed_polls == 0


def test_a_permanent_failure_passes_through():
    outage = Outage(logging.getLogger("poller"), "s3://b/t")
    with pytest.raises(StorageAccessDeniedError), outage.polling():
        raise StorageAccessDeniedError("access denied")
    assert outage.outages == 0
