"""The end of ``make demo``: what the run committed, with its metrics (dags_examples/demo_summary.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")

SCRIPT = Path(__file__).resolve().parents[2] / "dags_examples" / "demo_summary.py"


def test_the_summary_names_each_version_of_this_run_with_its_metrics(tmp_path: Path) -> None:
    table = tmp_path / "delta" / "orders"
    deltalake.write_deltalake(str(table), pa.table({"id": [1, 2]}))  # before the run
    for i in range(3):
        deltalake.write_deltalake(str(table), pa.table({"id": [10 + i]}), mode="append")
    deltalake.DeltaTable(str(table)).optimize.compact()
    (tmp_path / "changes" / "orders" / "up-to-0").mkdir(parents=True)  # an earlier run's
    (tmp_path / "changes" / "orders" / "up-to-4").mkdir(parents=True)
    before = json.dumps({"versions": {"orders": 0}, "changes": ["orders/up-to-0"]})
    printed = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), before], capture_output=True, text=True, check=True
    ).stdout.splitlines()

    assert printed[0] == "==> What the demo did"
    assert printed[1].startswith(f"{table}: version 4, 5 rows in 1 files (")
    assert printed[2] == "  versions committed by this run: 1-4"
    body = [line.split() for line in printed[4:8]]
    assert [(row[0], row[1]) for row in body] == [("1", "WRITE"), ("2", "WRITE"), ("3", "WRITE"), ("4", "OPTIMIZE")]
    assert "numFilesAdded=1" in printed[7] and "numFilesRemoved=4" in printed[7]
    versions = subprocess.run(
        [sys.executable, str(SCRIPT), "--versions", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(versions) == {"versions": {"orders": 4}, "changes": ["orders/up-to-0", "orders/up-to-4"]}
    # Only the folder this run wrote; the earlier run's is not listed again.
    assert [line for line in printed if line.startswith("change data feed")] == [
        f"change data feed written to {tmp_path / 'changes' / 'orders' / 'up-to-4'} (0 parquet files)"
    ]
