"""Without apache-airflow-providers-openlineage, everything runs and the lineage methods return None.

The test process has the extra installed, so a fresh interpreter hides it:
a meta-path finder fails every import of ``openlineage`` and
``airflow.providers.openlineage``, and their distributions are left out of
``importlib.metadata``, as if neither were installed. In it a
real APPEND (one spark-submit) and a sensor poke run, and their lineage
methods are called.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_delta_provider.hooks.delta_spark import application_path
from tests.airflow_env import SPARK_TEST_CONF

_PROBE = r"""
import importlib.abc, importlib.metadata, json, sys

import importlib_metadata


def _hidden(name):
    return name.split(".")[0] == "openlineage" or name.startswith("airflow.providers.openlineage")


class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if _hidden(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Absent())
# The distributions go too, so that Airflow's provider discovery does not list them.
for module in (importlib.metadata, importlib_metadata):
    every = module.distributions
    module.distributions = lambda every=every, **kw: (
        d for d in every(**kw) if "openlineage" not in (d.metadata["Name"] or "").lower()
    )

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.operators.delta import DeltaAppendOperator
from airflow_delta_provider.sensors.delta_table import DeltaTableVersionSensor

table, source, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), source)


class TI:
    dag_id, task_id, run_id, map_index = "no_lineage", "append", "manual__1", -1
    pushed = {}

    def xcom_push(self, key, value):
        self.pushed[key] = value


append = DeltaAppendOperator(task_id="append", table_path=table, source=source, conf=conf)
result = append.execute({"ti": TI()})
sensor = DeltaTableVersionSensor(task_id="wait", table_path=table, after_version=-1)
seen = sensor.poke({}).xcom_value
print(json.dumps({
    "version": result["version"],
    "rows": result["metrics"]["numOutputRows"],
    "seen": seen["version"],
    "lineage": [
        append.get_openlineage_facets_on_start(),
        append.get_openlineage_facets_on_complete(None),
        sensor.get_openlineage_facets_on_start(),
        sensor.get_openlineage_facets_on_complete(None),
    ],
    "imported": sorted(m for m in sys.modules if "openlineage" in m),
}))
"""


@pytest.mark.skipif(not Path(application_path()).is_file(), reason="the Spark CLI is not there yet")
def test_operators_and_sensors_run_and_report_no_lineage_without_the_extra(tmp_path: Path) -> None:
    table, source = tmp_path / "table", tmp_path / "source.parquet"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(table), str(source), json.dumps(SPARK_TEST_CONF)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (report["version"], report["rows"], report["seen"]) == (0, 3, 0)
    assert report["lineage"] == [None, None, None, None]
    assert report["imported"] == []
