"""One sensor poke costs the same few requests on a log of 100 versions and
of 10,000, on S3 (a listing from the last version seen) and on Azure
(existence checks at doubling steps: Azure cannot list from a name)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.delta.version_probe import VersionProbe
from tests.delta_logs import count_log_calls, write_log, write_commit

SIZES = (100, 10_000)


@pytest.fixture(scope="session")
def local_logs(tmp_path_factory) -> dict[int, Path]:
    return {n: write_log(tmp_path_factory.mktemp(f"log{n}") / "t", n) for n in SIZES}


def upload(local: Path, uri: str, options: dict[str, str]) -> None:
    storage = open_storage(uri, options)
    files = [p for p in local.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: storage.put(p.relative_to(local).as_posix(), p.read_bytes()), files))


def poke(probe: VersionProbe, after: int) -> int | None:
    """What the sensor does on each poke."""
    found = probe.newer_than(after)
    if found is not None:
        probe.info(found)
    return found


@pytest.mark.parametrize("store", ["s3_bucket", "azure_container"])
def test_a_poke_costs_the_same_at_100_and_10000_versions(store, request, local_logs, monkeypatch, tmp_path):
    backend = request.getfixturevalue(store)
    costs = {}
    for n, local in local_logs.items():
        uri = backend.uri(f"log{n}")
        upload(local, uri, backend.storage_options)
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
