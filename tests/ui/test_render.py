"""The Delta pages' HTML: the version page's links to its neighbours."""

from __future__ import annotations

from typing import Any

import pytest

import tests.airflow_env  # noqa: F401  (AIRFLOW_HOME before airflow loads)
from airflow_delta_provider.ui.render import version_page
from airflow_delta_provider.ui.tables import TableEntry


def _doc(version: int, latest: int) -> dict[str, Any]:
    empty: list[dict[str, Any]] = []
    return {"version": version, "latestVersion": latest, "commitInfo": {"operation": "WRITE"}, "schemaChange": None,
            "added": empty, "removed": empty, "numAdded": 0, "numRemoved": 0, "describe": {}}  # fmt: skip


@pytest.mark.parametrize(
    ("version", "latest", "previous", "following"),
    [(0, 0, False, False), (0, 2, False, True), (1, 2, True, True), (2, 2, True, False)],
)
def test_a_version_links_to_its_neighbours_and_none_past_the_latest(version, latest, previous, following):
    page = version_page(TableEntry("file:///data/orders"), _doc(version, latest), set())
    assert ('id="previous-version"' in page) is previous
    assert ('id="next-version"' in page) is following
    assert f"/versions/{latest + 1}" not in page
