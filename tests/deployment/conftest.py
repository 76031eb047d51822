"""The session's Airflow deployment (api-server, scheduler, dag-processor and
triggerer as separate processes; see :mod:`tests.deployment.airflow_deployment`).

It starts once, when the first test asks for it, and stops with the session.
A test module puts its DAG files into ``airflow_deployment.dags_folder``,
with DAG ids, assets and tables of its own, so modules can share it. Its auth
manager is SimpleAuthManager with one user whose DAGs are restricted
(:mod:`tests.deployment.auth_manager`). Plugins come as a user's deployment
finds them: through the installed package's ``airflow.plugins`` entry point,
with Airflow's default lazy provider discovery.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deployment.airflow_deployment import AirflowDeployment, airflow_deployment
from tests.deployment.auth_manager import SETTINGS


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    with airflow_deployment(tmp_path_factory.mktemp("airflow-deployment"), SETTINGS) as running:
        yield running
