"""The session's Airflow deployment (api-server, scheduler, dag-processor and
triggerer as separate processes; see :mod:`tests.deployment.airflow_deployment`).

It starts once, when the first test asks for it, and stops with the session.
A test module puts its DAG files into ``airflow_deployment.dags_folder``,
with DAG ids, assets and tables of its own, so modules can share it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deployment.airflow_deployment import AirflowDeployment, airflow_deployment


def _plugin_settings() -> dict[str, str]:
    """Until the package is installed again with its ``airflow.plugins`` entry point
    (setup.cfg), Airflow finds the plugin through the provider's ``plugins`` list,
    which it reads only when providers are discovered at start."""
    from importlib.metadata import entry_points

    if any(e.name == "delta" for e in entry_points(group="airflow.plugins")):
        return {}
    return {"AIRFLOW__CORE__LAZY_DISCOVER_PROVIDERS": "False"}


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    with airflow_deployment(tmp_path_factory.mktemp("airflow-deployment"), _plugin_settings()) as running:
        yield running
