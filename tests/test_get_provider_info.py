"""Airflow discovers the provider through its entry point."""

from __future__ import annotations

import importlib

import tests.airflow_env  # noqa: F401  (AIRFLOW_HOME before airflow loads)
from airflow_delta_provider.get_provider_info import get_provider_info


def test_every_listed_module_imports() -> None:
    info = get_provider_info()
    for kind in ("operators", "sensors", "hooks", "triggers"):
        for entry in info[kind]:
            for module in entry["python-modules"]:
                importlib.import_module(module)


def test_providers_manager_lists_the_provider_and_its_hook() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    provider = manager.providers["airflow-delta-provider"]
    assert provider.data["name"] == "Delta Lake"
    hook = manager.hooks["delta_spark"]
    assert hook.hook_class_name == "airflow_delta_provider.hooks.delta_spark.DeltaSparkHook"
    assert hook.connection_id_attribute_name == "conn_id"
    # The apache-spark provider keeps its own connection type.
    assert manager.hooks["spark"].package_name == "apache-airflow-providers-apache-spark"
