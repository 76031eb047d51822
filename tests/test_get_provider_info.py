"""Airflow discovers the provider through its entry point."""

from __future__ import annotations

import importlib

import pytest

import tests.airflow_env  # noqa: F401  (AIRFLOW_HOME before airflow loads)
from airflow_delta_provider.get_provider_info import get_provider_info


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


# --- get_provider_info lists what the package holds -----------------------------------------

#: Connection types the hooks use that another provider registers: type -> its package.
FOREIGN_CONN_TYPES = {
    "spark": "airflow.providers.apache.spark",  # DeltaSparkHook's spark-submit runner
    "spark_connect": "airflow.providers.apache.spark",  # DeltaInProcessHook
}


def _components() -> dict[str, set[type]]:
    """Every Airflow component class defined in operators/, hooks/, sensors/ and
    triggers/ (subpackages included), by the get_provider_info section that lists it."""
    import pkgutil

    from airflow.sdk import BaseHook, BaseOperator, BaseOperatorLink, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    # A sensor is an operator too: the first match wins.
    kinds = (
        ("sensors", BaseSensorOperator),
        ("operators", BaseOperator),
        ("hooks", BaseHook),
        ("triggers", BaseTrigger),
        ("extra-links", BaseOperatorLink),
    )
    found: dict[str, set[type]] = {section: set() for section, _ in kinds}
    for folder in ("operators", "hooks", "sensors", "triggers"):
        package = importlib.import_module(f"airflow_delta_provider.{folder}")
        for module_info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(module_info.name)
            for cls in vars(module).values():
                if not isinstance(cls, type) or cls.__module__ != module.__name__:
                    continue  # imported here, defined elsewhere
                section = next((section for section, base in kinds if issubclass(cls, base)), None)
                if section is not None:
                    found[section].add(cls)
    return found


def _listed_modules(section: str) -> set[str]:
    return {module for entry in get_provider_info()[section] for module in entry["python-modules"]}


@pytest.fixture(scope="module")
def components() -> dict[str, set[type]]:
    return _components()


@pytest.mark.parametrize("section", ["operators", "sensors", "hooks", "triggers"])
def test_a_section_lists_exactly_the_modules_that_define_its_classes(components, section) -> None:
    """A new module with an operator (or sensor, hook, trigger) must be listed;
    a listed module must exist and still define one."""
    defining = {cls.__module__ for cls in components[section]}
    listed = _listed_modules(section)
    assert defining, f"no {section} found: the walk is broken"
    assert sorted(defining - listed) == [], f"missing from get_provider_info()[{section!r}]"
    assert sorted(listed - defining) == [], f"listed in {section!r}, but define none"


def test_every_hook_connection_type_is_registered(components) -> None:
    """A hook's ``conn_type`` is in connection-types, with that hook, unless
    another provider registers it (:data:`FOREIGN_CONN_TYPES`)."""
    ours = {entry["connection-type"]: entry["hook-class-name"] for entry in get_provider_info()["connection-types"]}
    for hook in components["hooks"]:
        conn_type = getattr(hook, "conn_type", None)
        if conn_type is None:
            continue
        if conn_type in FOREIGN_CONN_TYPES:
            owner = importlib.import_module(f"{FOREIGN_CONN_TYPES[conn_type]}.get_provider_info").get_provider_info()
            assert conn_type in {entry["connection-type"] for entry in owner["connection-types"]}, hook
            assert conn_type not in ours, f"{conn_type} is {owner['package-name']}'s: do not register it again"
        elif "conn_type" in vars(hook):
            assert ours.get(conn_type) == f"{hook.__module__}.{hook.__qualname__}", hook
        else:
            assert conn_type in ours, hook  # inherited from a hook of ours


def test_every_connection_type_names_a_hook_of_that_type() -> None:
    from airflow.sdk import BaseHook

    for entry in get_provider_info()["connection-types"]:
        module, _, name = entry["hook-class-name"].rpartition(".")
        hook = getattr(importlib.import_module(module), name)
        assert issubclass(hook, BaseHook) and hook.conn_type == entry["connection-type"], entry


def test_extra_links_lists_exactly_the_link_classes(components) -> None:
    """Every link class defined in the package, and every one an operator of
    the package shows, is listed; every listed one exists."""
    listed = set(get_provider_info()["extra-links"])
    for name in listed:
        module, _, cls_name = name.rpartition(".")
        assert hasattr(importlib.import_module(module), cls_name), f"{name} does not exist"
    defined = {f"{cls.__module__}.{cls.__qualname__}" for cls in components["extra-links"]}
    shown = {
        f"{type(link).__module__}.{type(link).__qualname__}"
        for operator in components["operators"] | components["sensors"]
        for link in operator.operator_extra_links
        if type(link).__module__.startswith("airflow_delta_provider.")
    }
    assert sorted(shown - listed) == []
    assert sorted(listed) == sorted(defined)


def test_the_module_imports_nothing_at_import_time() -> None:
    """Discovery imports it in every Airflow process: neither Airflow nor the
    rest of the package may come with it."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, sys; import airflow_delta_provider.get_provider_info;"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'airflow_delta_provider'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), check=True)
    assert json.loads(out.stdout) == ["airflow_delta_provider", "airflow_delta_provider.get_provider_info"]


def test_the_ui_plugin_is_declared_by_both_entry_points() -> None:
    """The provider's ``plugins`` list and setup.cfg's ``airflow.plugins`` entry point name one plugin class."""
    import configparser
    from pathlib import Path

    from airflow.providers_manager import ProvidersManager

    from airflow_delta_provider.ui.plugin import PLUGIN_NAME, DeltaUIPlugin

    (listed,) = get_provider_info()["plugins"]
    assert listed == {"name": PLUGIN_NAME, "plugin-class": "airflow_delta_provider.ui.plugin.DeltaUIPlugin"}
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[1] / "setup.cfg")
    entry = setup["options.entry_points"]["airflow.plugins"].strip()
    assert entry == f"{PLUGIN_NAME} = airflow_delta_provider.ui.plugin:DeltaUIPlugin"
    assert DeltaUIPlugin.name == PLUGIN_NAME
    manager = ProvidersManager()
    manager.initialize_providers_plugins()
    assert any(p.plugin_class == listed["plugin-class"] for p in manager.plugins)


def test_the_installed_package_declares_the_plugin_entry_point() -> None:
    """What Airflow reads with its default lazy provider discovery: the installed distribution's
    ``airflow.plugins`` entry point (an editable install older than setup.cfg's lacks it)."""
    from importlib.metadata import entry_points

    from airflow_delta_provider.ui.plugin import PLUGIN_NAME, DeltaUIPlugin

    found = [e for e in entry_points(group="airflow.plugins") if e.name == PLUGIN_NAME]
    assert found, "no airflow.plugins entry point 'delta': install the package again (pip install -e .)"
    assert found[0].dist is not None and found[0].dist.name == "airflow-delta-provider"
    assert found[0].load() is DeltaUIPlugin
