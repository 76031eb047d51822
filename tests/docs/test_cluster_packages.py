"""The cluster's Python packages, as the docs list them, agree with the code.

docs/installation.rst ("What a cluster image needs", label
``cluster-python-packages``) gives the one ``pip install`` line for the
Python of the Spark driver and executors; docs/connections.rst and
docs/execution-modes.rst link to it rather than repeat it. The line must hold

- the provider's own dependencies, ``install_requires`` of setup.cfg but
  Airflow and its providers, with the same version bounds;
- every other package that the code sent to the cluster (``delta``,
  ``spark`` and ``requests``) imports, at module level or inside a function,
  except PySpark itself (``pyspark``, ``py4j``) and gRPC, which only the
  Spark Connect client in the Airflow task imports, and the catalogs' clients,
  which resolve names in the Airflow task (the cluster needs them only to
  give the Spark CLI a catalog name itself).
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
#: Imported by the code sent to the cluster, but not installed for it. The catalogs' clients
#: (docs/catalogs.rst) are needed there only when the Spark CLI is given a catalog name itself:
#: the hooks resolve names in the Airflow task and submit the location.
NOT_FOR_THE_CLUSTER = {"pyspark", "py4j", "grpc", "httpx", "boto3", "botocore", "hmsclient", "thrift"}


def documented_packages() -> dict[str, str]:
    """Distribution name -> version specifier, from the cluster's ``pip install`` line."""
    text = (ROOT / "docs" / "installation.rst").read_text()
    section = text[text.index(".. _cluster-python-packages:") :]
    line = next(line.strip() for line in section.splitlines() if line.strip().startswith("pip install "))
    words = re.findall(r"'([^']+)'|(\S+)", line.removeprefix("pip install "))
    requirements = [Requirement(quoted or bare) for quoted, bare in words]
    return {canonicalize_name(r.name): str(r.specifier) for r in requirements}


def install_requires() -> dict[str, str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lines = [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]
    requirements = [Requirement(line) for line in lines]
    return {
        canonicalize_name(r.name): str(r.specifier)
        for r in requirements
        if not canonicalize_name(r.name).startswith("apache-airflow")
    }


def imported_modules() -> set[str]:
    """Top-level third-party modules that ``delta``, ``spark`` and ``operations`` import."""
    modules = set()
    for package in ("delta", "spark", "operations"):
        for path in (ROOT / "airflow_delta_provider" / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names and m != "airflow_delta_provider"}


def test_the_cluster_line_holds_the_providers_own_dependencies() -> None:
    documented = documented_packages()
    assert {name: documented.get(name) for name in install_requires()} == install_requires()


def test_the_cluster_line_holds_every_package_the_cluster_code_imports() -> None:
    distributions = packages_distributions()
    needed = {canonicalize_name(distributions[module][0]) for module in imported_modules() - NOT_FOR_THE_CLUSTER}
    assert needed - set(documented_packages()) == set()


def test_the_other_pages_link_to_the_list_instead_of_repeating_it() -> None:
    for page in ("connections.rst", "execution-modes.rst"):
        text = (ROOT / "docs" / page).read_text()
        assert ":ref:`cluster-python-packages`" in text
        assert "pyroaring" not in text and "sqlglot" not in text
