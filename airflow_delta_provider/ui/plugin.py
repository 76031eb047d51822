"""The provider's Airflow plugin: the Delta pages in Airflow 3's UI.

Airflow finds it through the package's entry points, with no file copied
into ``AIRFLOW_HOME``: the ``airflow.plugins`` entry point (setup.cfg) and
the provider's ``plugins`` list (``get_provider_info``), as Airflow's own
providers declare theirs. On the api-server it adds the FastAPI app of
:mod:`.app` at ``/delta`` and a "Delta tables" entry in the UI's navigation
that shows it. Every other Airflow process loads plugins too (a task's
worker, the scheduler): there the plugin is empty, and neither FastAPI nor
the api-server's modules are imported (as the Edge provider does).
"""

from __future__ import annotations

import sys
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_delta_provider.utils.ui_paths import URL_PREFIX

PLUGIN_NAME = "delta"


def on_api_server() -> bool:
    """Whether this process is ``airflow api-server`` (or one of its workers)."""
    return len(sys.argv) > 1 and sys.argv[1] == "api-server"


def fastapi_apps() -> list[dict[str, Any]]:
    from airflow_delta_provider.ui.app import create_app

    return [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Delta tables"}]


EXTERNAL_VIEWS = [
    {
        "name": "Delta tables",
        "href": f"{URL_PREFIX}/tables",
        "destination": "nav",
        "url_route": "delta-tables",
        "category": "browse",
    }
]


class DeltaUIPlugin(AirflowPlugin):
    """Delta tables, their versions and the task instances that wrote them."""

    name = PLUGIN_NAME
    fastapi_apps = fastapi_apps() if on_api_server() else []
    external_views = EXTERNAL_VIEWS if on_api_server() else []


__all__ = ["PLUGIN_NAME", "DeltaUIPlugin", "fastapi_apps", "on_api_server"]
