"""Parsing a DAG that uses the provider must stay light: no pyspark, pyarrow,
obstore, or cloud SDK.

Each check runs in a fresh interpreter, since this test process has long
imported both.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

AIRFLOW_MODULES = [
    "airflow_delta_provider.operators.delta",
    "airflow_delta_provider.sensors.delta_table",
    "airflow_delta_provider.hooks.delta_spark",
    "airflow_delta_provider.triggers.delta_table",
    "airflow_delta_provider.hooks.storage_connection",
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
