"""One sensor poke costs the same few storage calls on a log of 100 versions
and of 10,000 on Azure (existence checks at doubling steps: Azure cannot list
from a name). S3's cost (a listing from the last version seen) is counted as
HTTP requests at the wire, through the real sensor and trigger, in
``tests/sensors/test_poke_cost_on_s3.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_delta_provider.delta.log.version_probe import VersionProbe
from airflow_delta_provider.delta.storage import open_storage
from tests.delta_logs import count_log_calls, write_commit, write_log
from tests.storage_servers import upload_tree

SIZES = (100, 10_000)


@pytest.fixture(scope="session")
def local_logs(tmp_path_factory) -> dict[int, Path]:
    return {n: write_log(tmp_path_factory.mktemp(f"log{n}") / "t", n) for n in SIZES}


def poke(probe: VersionProbe, after: int) -> int | None:
    """What the sensor does on each poke."""
    found = probe.newer_than(after)
    if found is not None:
        probe.info(found)
    return found


def test_a_poke_costs_the_same_at_100_and_10000_versions(azure_container, local_logs, monkeypatch, tmp_path):
    backend = azure_container
    costs = {}
    for n, local in local_logs.items():
        uri = backend.uri(f"log{n}")
        upload_tree(local, uri, backend.storage_options)
        probe = VersionProbe(uri, backend.storage_options)
        assert probe.latest() == n - 1
        with monkeypatch.context() as m:
            calls = count_log_calls(m)
            assert poke(probe, n - 1) is None
            nothing_new = calls.total
        # One more commit arrives (written locally, then put in place).
        write_commit(tmp_path, n)
        name = f"_delta_log/{n:020d}.json"
        open_storage(uri, backend.storage_options).put(name, (tmp_path / name).read_bytes())
        with monkeypatch.context() as m:
            calls = count_log_calls(m)
            assert poke(probe, n - 1) == n
            one_new = calls.total
        costs[n] = (nothing_new, one_new)
    assert costs[100] == costs[10_000]
    assert costs[100][0] == 1 and costs[100][1] <= 3
