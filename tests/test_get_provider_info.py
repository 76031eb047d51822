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


def test_the_description_names_every_operation_of_the_operators() -> None:
    """Each operator's operation, as the Spark CLI names it, and those that run with no Spark."""
    import re

    from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
    from airflow_delta_provider.operators import delta as operators

    description = get_provider_info()["description"]
    operations = {
        cls.operation
        for cls in vars(operators).values()
        if isinstance(cls, type)
        and issubclass(cls, operators.DeltaSparkOperator)
        and cls is not operators.DeltaSparkOperator
    }
    assert [op for op in sorted(operations) if not re.search(rf"\b{op.upper()}\b", description)] == []
    *first, last = (op.upper() for op in PYTHON_ENGINE_OPERATIONS)
    assert f"{', '.join(first)} and {last} also with no Spark" in description


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


def test_airflow_cli_lists_the_provider_and_its_hook() -> None:
    """What a user sees: ``airflow providers list`` and ``airflow providers hooks``."""
    import os
    import subprocess
    import sys

    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    for command, expected in (("list", "airflow-delta-provider"), ("hooks", "DeltaSparkHook")):
        out = subprocess.run(
            [airflow, "providers", command, "--output", "plain"],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        ).stdout
        assert expected in out, f"airflow providers {command} does not show {expected}"


def test_the_health_report_link_is_registered() -> None:
    from airflow.providers_manager import ProvidersManager

    from airflow_delta_provider.operators.maintenance import DeltaHealthReportLink

    name = "airflow_delta_provider.operators.maintenance.DeltaHealthReportLink"
    assert name in get_provider_info()["extra-links"]
    assert name in ProvidersManager().extra_links_class_names
    assert DeltaHealthReportLink.name == "Delta health report"
