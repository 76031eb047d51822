"""The operations that run without Spark (CHECKPOINT, VACUUM, CLONE) through
10% of store requests failing (every fault kind, seeded), on S3 and Azure.

Each either commits exactly once with the right rows, or fails with a
retryable typed error; run again as Airflow retries a task (same token), it
then commits once in all. VACUUM's two commits (START, END) both lose their
answer, and still each lands once.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG, RemoveFile, parse_commit
from airflow_delta_provider.delta.errors import CommitOutcomeUnknownError, StorageError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.checkpoint import run as checkpoint
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone import run as clone
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.vacuum import run as vacuum
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec
from tests.delta.conftest import create_table, read_snapshot, write_data_file
from tests.fault_proxy import COMMITS, Rule, random_faults
from tests.storage_servers import AZURITE_ACCOUNT

ALL = os.environ.get("FAULTS_ALL") == "1"
SEEDS = [3, 5, 8] if ALL else [3]
SCHEMA = pa.schema([("id", pa.int64())])
VACUUMED = [("VACUUM START", None), ("VACUUM END", "vac")]
FAST = {"timeout": "500ms", "retry_init_backoff": "10ms", "retry_max_backoff": "200ms"}


@pytest.fixture
def store(faulty_store, monkeypatch):
    for key, value in faulty_store.env.items():
        monkeypatch.setenv(key, value)
    faulty_store.faults.hold_seconds = 0.8
    return faulty_store


def _table_with_history(uri: str) -> DeltaTable:
    """Versions 0-2 (ids 0, 1, 2), then version 3 removes id 0's file: one file for VACUUM."""
    adds = [write_data_file(uri, pa.table({"id": [0]}, schema=SCHEMA))]
    create_table(uri, SCHEMA, adds=adds)
    table = DeltaTable(uri)
    for i in (1, 2):
        txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
        txn.add(write_data_file(uri, pa.table({"id": [i]}, schema=SCHEMA)))
        txn.commit(metrics={})
    txn = table.transaction("DELETE", parameters={}, snapshot=table.snapshot())
    txn.add(RemoveFile(path=adds[0].path, deletion_timestamp=0, data_change=True))
    txn.commit(metrics={})
    return table


def _named(store, rel: str) -> str:
    """A location other engines can resolve: on Azure, with its account (a clone's paths need it)."""
    if store.name != "azure":
        return store.uri(rel)
    return f"abfss://{store.bucket}@{AZURITE_ACCOUNT}.dfs.core.windows.net/{rel}"


def _as_a_retried_task(fn):
    """Run ``fn`` until it succeeds, as Airflow retries a task that failed retryably."""
    for _ in range(5):
        try:
            return fn()
        except (StorageError, CommitOutcomeUnknownError):
            continue
    raise AssertionError("five tries failed")


def _commits(table: DeltaTable) -> list[tuple[str, str | None]]:
    """Each commit's (operation, token), in version order."""
    out = []
    for f in table.log_store.list_from(0):
        if f.kind == "commit":
            info = next(a for a in parse_commit(table.log_store.read(f.name)) if a.KEY == "commitInfo")
            out.append((info.raw["operation"], info.raw.get("tags", {}).get(TOKEN_TAG)))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_checkpoint_vacuum_and_clone_through_ten_percent_faults(store, seed):
    uri, target = _named(store, "t"), _named(store, "clone")
    _table_with_history(uri)
    options = {**store.storage_options, **FAST}
    with store.faults.inject(*random_faults(0.10), seed=seed):
        _as_a_retried_task(lambda: checkpoint.run(None, CheckpointSpec(table_path=uri, token="cp"), options))
        vacuumed = _as_a_retried_task(
            lambda: vacuum.run(
                None, VacuumSpec(table_path=uri, retention_hours=0, retention_check=False, token="vac"), options
            )
        )
        cloned = _as_a_retried_task(
            lambda: clone.run(None, CloneSpec(table_path=target, source_path=uri, token="cl"), options)
        )
    table = DeltaTable(uri, store.storage_options)
    assert table.latest_version() == 5  # VACUUM START and END, once each
    assert _commits(table)[4:] == VACUUMED
    assert vacuumed.version == 5 and cloned.version == 0
    assert table.log_store.exists("00000000000000000003.checkpoint.parquet")
    assert sorted(read_snapshot(table.snapshot())["id"].to_pylist()) == [1, 2]
    copy = DeltaTable(target, store.storage_options)
    assert [token for _op, token in _commits(copy)] == ["cl"]
    assert sorted(read_snapshot(copy.snapshot())["id"].to_pylist()) == [1, 2]


def test_both_vacuum_commits_lose_their_answer_and_land_once(store):
    uri = store.uri("t")
    _table_with_history(uri)
    lost = Rule("timeout_after", methods=("PUT",), paths=(COMMITS,), schedule=frozenset({1, 2}))
    with store.faults.inject(lost) as hit:
        result = vacuum.run(
            None,
            VacuumSpec(table_path=uri, retention_hours=0, retention_check=False, token="vac"),
            {**store.storage_options, **FAST},
        )
    assert len(hit) == 2
    table = DeltaTable(uri, store.storage_options)
    assert result.version == table.latest_version() == 5
    assert _commits(table)[4:] == VACUUMED
    assert int(result.metrics["numDeletedFiles"]) == 1
