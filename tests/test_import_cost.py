"""Parsing a DAG that uses the provider must stay light: no pyspark, pyarrow,
obstore, or cloud SDK.

Each check runs in a fresh interpreter, since this test process has long
imported both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

AIRFLOW_MODULES = [
    "airflow_delta_provider.operators.delta",
    "airflow_delta_provider.operators.table_info",
    "airflow_delta_provider.operators.maintenance",
    "airflow_delta_provider.sensors.delta_table",
    "airflow_delta_provider.hooks.delta_spark",
    "airflow_delta_provider.hooks.delta_in_process",
    "airflow_delta_provider.triggers.delta_table",
    "airflow_delta_provider.assets",
    "airflow_delta_provider.utils.storage_connection",
    "airflow_delta_provider.ui.plugin",  # every Airflow process loads plugins
]


@pytest.mark.parametrize("module", AIRFLOW_MODULES)
def test_importing_the_airflow_layer_loads_neither_pyspark_nor_pyarrow(module: str, tmp_path) -> None:
    code = (
        "import importlib, json, sys;"
        f"importlib.import_module({module!r});"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'pyarrow', 'py4j', 'obstore', 'pyroaring', 'boto3', 'azure', 'google'})))"
    )
    env = {"AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_parsing_the_example_dags_imports_no_openlineage(tmp_path) -> None:
    """With OpenLineage configured, parsing DAG files imports neither its client,
    its extractors nor ``airflow_delta_provider.lineage``: the operators' and
    the sensor's lineage methods import them when they run. Airflow's own
    provider discovery reads every provider's ``get_provider_info``, and only that."""
    pytest.importorskip("airflow.providers.openlineage")
    root = Path(__file__).resolve().parent.parent
    code = (
        "import json, sys;"
        "from airflow.dag_processing.dagbag import DagBag;"
        f"bag = DagBag(dag_folder={str(root / 'dags_examples')!r});"
        "print(json.dumps({'dags': len(bag.dags), 'errors': list(bag.import_errors),"
        " 'modules': sorted(m for m in sys.modules if 'openlineage' in m or m.startswith('airflow_delta_provider.'))}))"
    )
    env = {
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "console"}),
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    parsed = json.loads(out.stdout.strip().splitlines()[-1])
    assert (parsed["dags"], parsed["errors"]) == (9, [])
    assert "airflow_delta_provider.operators.delta" in parsed["modules"]  # the parse did load the provider
    discovery = {"airflow.providers.openlineage", "airflow.providers.openlineage.get_provider_info"}
    lineage = [m for m in parsed["modules"] if "openlineage" in m or m.startswith("airflow_delta_provider.lineage")]
    assert set(lineage) <= discovery
