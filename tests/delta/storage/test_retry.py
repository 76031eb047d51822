"""Store calls through every fault the proxy injects (moto's S3, Azurite).

Each call (create, put, get, head, listing, delete) meets each fault once and
still gives its answer: obstore retries 5xx and resets of the requests it
knows idempotent, :mod:`~airflow_delta_provider.delta.storage.retry` the rest
(a bulk delete's POST, a cut-off listing), and a create whose answer was lost
is settled by reading it back. Retries are bounded by the store's settings,
log one line each at most, and never a secret.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import uuid

import pytest

from airflow_delta_provider.delta.errors import StorageError
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.storage.options import split_options
from airflow_delta_provider.delta.storage.retry import RetryPolicy, is_transient
from tests.fault_proxy import FAULTS, Rule

ALL = os.environ.get("FAULTS_ALL") == "1"
FAST = {"timeout": "500ms", "retry_init_backoff": "10ms", "retry_max_backoff": "100ms", "delta_atomic_create": "trust"}
CALLS = ("create", "put", "get", "head", "list", "delete")


@pytest.fixture
def storage(faulty_store):
    faulty_store.faults.hold_seconds = 0.8
    return open_storage(faulty_store.uri("t"), {**faulty_store.storage_options, **FAST})


def _call(storage, name: str):
    if name == "create":
        return storage.put_if_absent(f"_delta_log/{uuid.uuid4().hex}.json", b"{}")
    if name == "put":
        return storage.put("x/b", b"bbbb")
    if name == "get":
        return storage.get("x/a")
    if name == "head":
        return storage.head("x/a").size
    if name == "list":
        return [m.path for m in storage.list_dir("x")]
    return storage.delete("x/gone")


EXPECTED = {"create": True, "put": None, "get": b"hello", "head": 5, "delete": None}
#: make test: every fault, on the calls it is hardest for (S3 and Azure each).
KINDS = FAULTS if ALL else ("503", "reset_after", "timeout_after", "drop_body")
SUBSET_CALLS = {"503": ("create", "list"), "timeout_after": ("create", "delete")}


@pytest.mark.parametrize("fault", KINDS)
def test_every_call_answers_through_one_fault(storage, faulty_store, fault, caplog):
    storage.put("x/a", b"hello")
    calls = CALLS if ALL else SUBSET_CALLS.get(fault, CALLS)
    for name in calls:
        with caplog.at_level(logging.WARNING), faulty_store.faults.inject(Rule(fault, schedule=frozenset({1}))) as hit:
            got = _call(storage, name)
        expected = EXPECTED.get(name, ["x/a", "x/b"] if name == "list" else None)
        if name == "list":
            got = [p for p in got if p == "x/a"]
            expected = ["x/a"]
        assert got == expected, (name, fault)
        assert len(hit) <= 1
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) <= len(calls)
    assert not any(faulty_store.secret in r.getMessage() for r in caplog.records)


def test_retries_are_bounded_by_the_store_settings(faulty_store):
    storage = open_storage(faulty_store.uri("t"), {**faulty_store.storage_options, **FAST, "max_retries": "2"})
    with faulty_store.faults.inject(Rule("503", probability=1.0)), pytest.raises(StorageError, match="503") as failed:
        storage.get("x/a")
    assert faulty_store.secret not in str(failed.value)
    body_cut = Rule("drop_body", methods=("GET",), probability=1.0)
    with faulty_store.faults.inject(body_cut) as hit, pytest.raises(StorageError, match="body"):
        storage.list_dir("x")
    assert 1 < len(hit) <= 3  # the first try and two retries


def test_retry_settings_are_storage_options_or_variables(monkeypatch):
    opts = split_options({"retry_init_backoff": "50ms", "retry_max_backoff": "2s", "retry_backoff_base": "3"})
    assert opts.retry["backoff"] == {
        "init_backoff": dt.timedelta(milliseconds=50),
        "max_backoff": dt.timedelta(seconds=2),
        "base": 3.0,
    }
    monkeypatch.setenv("DELTA_STORE_MAX_RETRIES", "4")
    monkeypatch.setenv("DELTA_STORE_RETRY_TIMEOUT", "20s")
    assert split_options({"max_retries": "5"}).retry == {"max_retries": 5, "retry_timeout": dt.timedelta(seconds=20)}
    policy = RetryPolicy.of(split_options({}).retry)
    assert (policy.max_retries, policy.retry_timeout) == (4, 20.0)
    assert all(0 <= policy.backoff(n) <= min(15.0, 0.1 * 2 ** (n - 1)) for n in range(1, 12))


def test_only_errors_obstore_gave_up_on_at_once_are_retried_here():
    assert is_transient(
        "Generic S3 error: Error getting list response body: HTTP error: request or response body error"
    )
    assert is_transient("Error performing POST http://h/b?<redacted> in 1s - HTTP error: error sending request")
    spent = (
        "Error performing GET http://h/b/k in 3s, after 2 retries, max_retries: 2, retry_timeout: 180s  - HTTP error"
    )
    assert not is_transient(spent)
    assert not is_transient("Server returned non-2xx status code: 412 Precondition Failed")
