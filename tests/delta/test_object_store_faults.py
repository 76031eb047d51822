"""Commits on S3 when the store fails mid-way (a dedicated moto server per test).

- The server goes away between the data write and the log write: the commit
  fails with a typed error, the table stays at its previous version, and a
  retry once the server is back commits exactly once.
- A create whose answer is lost after the object was written is settled by
  reading the log back, never by a second commit.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import CommitOutcomeUnknownError
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])
#: Fail fast while the server is down (the default retries for three minutes).
FAST_FAIL = {"max_retries": "1", "retry_timeout": "2s", "timeout": "2s", "connect_timeout": "1s"}


@pytest.fixture
def own_s3(stoppable_s3, monkeypatch):
    for key, value in stoppable_s3.env.items():
        monkeypatch.setenv(key, value)
    return stoppable_s3


def test_server_gone_between_data_and_log_write_then_retry_commits_once(own_s3, new_table, data_file):
    uri = own_s3.uri("t")
    new_table(uri, SCHEMA, adds=[data_file(uri, pa.table({"id": [1]}))])
    table = DeltaTable(uri, {**own_s3.storage_options, **FAST_FAIL})

    add = data_file(uri, pa.table({"id": [2]}))  # the data write lands
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(add)
    # The once-per-store atomic-create probe runs now, so that with the server
    # gone it is the commit's own create that fails, and its read-back too.
    table.storage._check_atomic_create()
    own_s3.stop()
    with pytest.raises(CommitOutcomeUnknownError, match="may or may not have succeeded") as failed:
        txn.commit(metrics={}, token="load-2")
    assert own_s3.secret not in str(failed.value)
    own_s3.start()

    assert table.latest_version() == 0
    assert table.find_commit("load-2") is None
    # The retry: the same work, as a retried task does it (token first, then commit).
    retry = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    retry.add(add)
    assert retry.commit(metrics={}, token="load-2").version == 1
    assert table.latest_version() == 1
    commits = [f.version for f in table.log_store.list_from(0) if f.kind == "commit"]
    assert commits == [0, 1]
    assert sorted(f.path for f in table.snapshot().files) == sorted(
        [f.path for f in DeltaTable(uri).snapshot(version=0).files] + [add.path]
    )


def test_a_lost_answer_to_a_create_is_settled_by_reading_back(own_s3, new_table, data_file):
    uri = own_s3.uri("t")
    new_table(uri, SCHEMA, adds=[data_file(uri, pa.table({"id": [1]}))])
    table = DeltaTable(uri, {**own_s3.storage_options, "max_retries": "0", "timeout": "1s"})
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    txn.add(data_file(uri, pa.table({"id": [2]})))
    with own_s3.delay_responses(seconds=2.5, path_contains="_delta_log/00000000000000000001.json"):
        result = txn.commit(metrics={}, token="slow")
    assert result.version == 1 and result.attempts == 1
    time.sleep(0.5)
    assert [f.version for f in table.log_store.list_from(0) if f.kind == "commit"] == [0, 1]
    assert table.find_commit("slow")[0] == 1
