"""The Delta pages (issue 43) on a table of 10,000 versions: each page must open in under 2 s.

The table has versions 0..9,999 (one ``add`` each, a commitInfo with an
operation token on every other one) and a checkpoint at 9,990 with
``_last_checkpoint``, as delta-spark leaves a long-lived table. It is written
once into ``benchmarks/.data/`` (the commits by hand, the checkpoint by the
core).

Each page is requested through the plugin's FastAPI app (routing, the reads
through the core, the HTML), with the signed-in user stubbed out (the
api-server's auth is not what is measured), from a **cold** reader (a new
api-server worker: empty caches) and a **warm** one (the page asked before):

- ``/tables``: the tables page (latest version, the health report and badge);
- ``/tables/{id}``: the newest 50 versions of the timeline;
- ``/tables/{id}?before=5000``: 50 versions from the middle of the log;
- ``/tables/{id}/versions/9999`` and ``/versions/5000``: a version's detail
  (its commit, the table as of it: a time-travel snapshot);
- ``/tables/{id}/health``: the health report's charts.

Run ``python benchmarks/bench_ui_pages.py [--reps N]``; results go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-ui-airflow-"))

VERSIONS = 10_000
TARGET_S = 2.0


def build(root: Path) -> Path:
    """The 10,000-version table (kept between runs)."""
    from airflow_delta_provider.delta.checkpoint.writer import write_checkpoint
    from airflow_delta_provider.delta.table import DeltaTable
    from tests.delta_logs import write_log

    if (root / "_delta_log" / f"{VERSIONS - 1:020d}.json").exists():
        return root
    write_log(root, VERSIONS, checkpoint_interval=None)
    log = root / "_delta_log"
    for version in range(1, VERSIONS, 2):  # every other commit: a task's, with its token
        path = log / f"{version:020d}.json"
        info = {"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE",
                "operationMetrics": {"numOutputRows": "10", "numOutputBytes": "1000", "executionTimeMs": "900"},
                "tags": {"airflow.operationToken": f"etl/load/scheduled__{version}/-1"}, "engineInfo": "bench"}}  # fmt: skip
        lines = [line for line in path.read_text().splitlines() if '"commitInfo"' not in line]
        path.write_text("\n".join([json.dumps(info), *lines]) + "\n")
    table = DeltaTable(root)
    write_checkpoint(table, table.snapshot(VERSIONS - 10))
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    root = build(HERE / ".data" / "ui-10k-versions")

    from fastapi.testclient import TestClient

    from airflow_delta_provider.assets.uri import table_asset_uri
    from airflow_delta_provider.ui import app as ui_app
    from airflow_delta_provider.ui.reads import TableReader
    from airflow_delta_provider.ui.tables import TableEntry

    entry = TableEntry(table_asset_uri(str(root)), dag_ids={"etl"})

    class Viewer:  # the signed-in user, stubbed: may read the DAG that wrote the table
        readable_dag_ids: ClassVar[set[str]] = {"etl"}

        def tables(self) -> dict[str, TableEntry]:
            return {entry.id: entry}

        def table(self, table_id: str) -> TableEntry:
            return entry

    pages = ["/tables", f"/tables/{entry.id}", f"/tables/{entry.id}?before=5000",
             f"/tables/{entry.id}/versions/9999", f"/tables/{entry.id}/versions/5000", f"/tables/{entry.id}/health"]  # fmt: skip
    results = []
    for page in pages:
        cold, warm = [], []
        for _ in range(args.reps):
            app = ui_app.create_app(TableReader())
            app.dependency_overrides[ui_app.Viewer] = Viewer
            client = TestClient(app)
            for times in (cold, warm):
                start = time.perf_counter()
                answer = client.get(page)
                times.append(time.perf_counter() - start)
                assert answer.status_code == 200 and "cannot be read" not in answer.text, (page, answer.text[:300])
        row = {
            "page": page.replace(entry.id, "{id}"),
            "cold_s": statistics.median(cold),
            "warm_s": statistics.median(warm),
        }
        results.append(row)
        ok = "ok" if row["cold_s"] < TARGET_S else "SLOW"
        print(f"{row['page']:<32} cold {row['cold_s']:.3f} s  warm {row['warm_s']:.3f} s  {ok}")
    out = HERE / "results" / "ui_pages.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"versions": VERSIONS, "machine": platform.platform(), "results": results}, indent=2))
    return 0 if all(r["cold_s"] < TARGET_S for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
