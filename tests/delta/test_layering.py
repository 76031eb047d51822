"""The protocol core stands alone: it never imports pyspark or airflow.

Checked in a fresh interpreter, so nothing the test session already imported
can hide an import the core makes.
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = r"""
import importlib, json, pkgutil, sys
import airflow_delta_provider.delta as core
names = [core.__name__]
for info in pkgutil.walk_packages(core.__path__, core.__name__ + "."):
    if info.name.endswith(".__main__"):  # running it is the CLI; see the next test
        continue
    importlib.import_module(info.name)
    names.append(info.name)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "airflow"))
print(json.dumps({"modules": names, "heavy": heavy}))
"""


def test_core_imports_neither_pyspark_nor_airflow() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # The walk really covered the core's modules, not just the package.
    for module in (
        "snapshot",
        "table",
        "transaction.transaction",
        "transaction.post_commit",
        "checkpoint.writer",
        "log.store",
        "actions.model",
        "schema.types",
        "table_features.gate",
    ):
        assert f"airflow_delta_provider.delta.{module}" in report["modules"]
    assert report["heavy"] == []


def test_core_cli_runs_without_pyspark_or_airflow(tmp_path) -> None:
    """``python -m airflow_delta_provider.delta`` on a missing table: a typed
    error (exit 2, one line) and still no heavy import."""
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['delta', 'describe', {str(tmp_path / 'nope')!r}]\n"
        "try:\n"
        "    runpy.run_module('airflow_delta_provider.delta', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'airflow')]\n"
        "    print('HEAVY', heavy, file=sys.stderr)\n"
        "    raise\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "HEAVY []"
    assert len(lines) == 2 and "nope" in lines[0]
