"""Issue 43 in a real deployment: the Delta pages of the provider's plugin, served by the
api-server and loaded in headless Chromium.

delta-rs writes a table's first two versions; then ``airflow dags test`` runs a DAG
that appends to, updates and optimizes it over Spark Connect (the session's server),
against the deployment's database: one process, its three tasks one after another on
one warm server, the task instances and their extra links recorded as the scheduler
would. The table's page must show the three versions linked to the task instances
that committed them and delta-rs's two marked as another engine's, with delta-rs's
counts; each writing task's extra link must open its version's page. Airflow's
navigation must list the pages; the plugin's API must refuse a request without
credentials and hide the table from a user who may not read its DAG; a table on
moto S3 read with a connection must show its secret nowhere.
``DELTA_UI_SCREENSHOT=<folder>`` keeps the screenshots (docs/_static), with the
test's temporary folder shown as :data:`SHOWN_ROOT`.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from airflow_delta_provider.assets.uri import table_asset_uri
from airflow_delta_provider.hooks.delta_operation import parse_operation_token
from airflow_delta_provider.operators.version_link import DeltaVersionLink
from airflow_delta_provider.utils.ui_paths import table_id, task_instance_path
from tests.browser import Browser
from tests.deployment.airflow_deployment import AirflowDeployment
from tests.deployment.auth_manager import OUTSIDER
from tests.storage_servers import S3_SECRET, s3_backend, upload_tree

DAG_ID = "delta_pages"
TASKS = ("append", "update", "optimize")
#: Seconds ``airflow dags test`` may take on a loaded two-core machine (it takes far less).
RUN_DEADLINE = 900.0
#: Where the screenshots say the table is, instead of the test machine's temporary folder.
SHOWN_ROOT = "/data"

DAG = """
import pendulum
from airflow.sdk import DAG

from airflow_delta_provider.operators.delta import DeltaAppendOperator, DeltaOptimizeOperator, DeltaUpdateOperator

TABLE, SOURCE, CONN = {table!r}, {source!r}, {conn!r}

# No schedule: the test runs it once, with `airflow dags test`.
with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2024, 1, 1), catchup=False):
    common = dict(table_path=TABLE, conn_id=CONN)
    (
        DeltaAppendOperator(task_id="append", source=SOURCE, source_format="parquet", **common)
        >> DeltaUpdateOperator(task_id="update", condition="id = 1", updates={{"status": "'done'"}}, **common)
        >> DeltaOptimizeOperator(task_id="optimize", **common)
    )
"""


@dataclass
class Pages:
    deployment: AirflowDeployment
    base: str
    token: str
    work: Path
    table: str
    run_id: str
    s3_uri: str

    def api(self, path: str, token: str | None = None) -> Any:
        request = urllib.request.Request(f"{self.base}{path}")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.read().decode()

    def browser(self) -> Browser:
        from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN

        browser = Browser()
        browser.set_cookie(self.base, COOKIE_NAME_JWT_TOKEN, self.token)
        return browser

    def keep(self, browser: Browser, name: str) -> None:
        """Under ``DELTA_UI_SCREENSHOT``, a screenshot of the page, the temporary folder shown as :data:`SHOWN_ROOT`."""
        folder = os.environ.get("DELTA_UI_SCREENSHOT")
        if not folder:
            return
        browser.evaluate(f"document.body.innerHTML = document.body.innerHTML.split({json.dumps(str(self.work))})"
                         f".join({json.dumps(SHOWN_ROOT)})")  # fmt: skip
        Path(folder, name).write_bytes(browser.screenshot())


def _insert(deployment: AirflowDeployment, table: str, **row: Any) -> None:
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    deployment.execute((f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values())))


def _run_dag(deployment: AirflowDeployment) -> str:
    """Run the DAG once with ``airflow dags test``; its run id. A failure shows the failed task's log."""
    try:
        deployment.airflow("dags", "test", DAG_ID, timeout=RUN_DEADLINE)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        output = str(exc) if isinstance(exc, RuntimeError) else f"timed out:\n{exc.stdout!r}\n{exc.stderr!r}"
        runs = deployment.dag_runs(DAG_ID)
        logs = deployment.failed_task_logs(DAG_ID, runs[-1][1]) if runs else "no run"
        pytest.fail(f"airflow dags test {DAG_ID} failed\n{logs}\n--- its output's end ---\n{output[-8000:]}")
    ((_, run_id, state),) = deployment.dag_runs(DAG_ID)
    assert state == "success", deployment.failed_task_logs(DAG_ID, run_id)
    return run_id


@pytest.fixture(scope="module")
def pages(deployment: AirflowDeployment, spark_connect, moto_server, tmp_path_factory) -> Pages:
    work = tmp_path_factory.mktemp("delta-pages")
    table, source = work / "orders", work / "incoming"
    write_deltalake(str(table), pa.table({"id": pa.array([1, 2], pa.int64()), "status": ["new", "new"]}))
    write_deltalake(str(table), pa.table({"id": pa.array([3, 4], pa.int64()), "status": ["new", "new"]}), mode="append")
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([5, 6, 7], pa.int64()), "status": ["new"] * 3}), source / "part-0.parquet")
    # A table on moto S3, read with a connection; and one the api-server cannot reach.
    s3 = s3_backend(moto_server)
    local = work / "s3-table"
    write_deltalake(str(local), pa.table({"id": pa.array([1], pa.int64())}))
    upload_tree(local, s3.uri("events"), s3.storage_options)
    extra = {"endpoint_url": s3.endpoint, "region_name": "us-east-1"}
    _insert(deployment, "connection", conn_id="delta_pages_s3", conn_type="aws", login="moto-key-id",
            password=S3_SECRET, extra=json.dumps(extra), is_encrypted=False, is_extra_encrypted=False)  # fmt: skip
    _insert(deployment, "connection", conn_id="delta_pages_connect", conn_type="spark_connect", host="127.0.0.1",
            port=spark_connect.port, is_encrypted=False, is_extra_encrypted=False)  # fmt: skip
    listed = {"tables": [{"uri": s3.uri("events"), "conn_id": "delta_pages_s3"}, f"s3://{s3.bucket}/missing"],
              "connections": {f"s3://{s3.bucket}/": "delta_pages_s3"}}  # fmt: skip
    _insert(deployment, "variable", key="delta_ui", val=json.dumps(listed), is_encrypted=False)
    dag = DAG.format(dag_id=DAG_ID, table=str(table), source=str(source), conn="delta_pages_connect")
    (deployment.dags_folder / f"{DAG_ID}.py").write_text(dag)
    run_id = _run_dag(deployment)
    base = f"http://127.0.0.1:{deployment.port}"
    return Pages(deployment, base, deployment.token(), work, str(table), run_id, s3.uri("events"))


class _Rows(HTMLParser):
    """``tr.version`` rows of a table page: version, classes, cells' text, task-instance link."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[int, dict[str, Any]] = {}
        self._row: dict[str, Any] | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "version" in (a.get("class") or "").split():
            self._row = {"classes": (a.get("class") or "").split(), "cells": {}, "link": None}
            self.rows[int(a["data-version"] or 0)] = self._row
        elif self._row is not None and tag == "td":
            self._cell = next((c for c in (a.get("class") or "").split() if c.startswith("rows-")), "")
            self._row["cells"][self._cell] = ""
        elif self._row is not None and tag == "a" and a.get("class") == "task-instance":
            self._row["link"] = a.get("href")

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._cell:
            self._row["cells"][self._cell] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None


def test_the_table_page_links_each_version_to_the_task_instance_that_wrote_it(pages: Pages) -> None:
    uri = table_asset_uri(pages.table)
    with pages.browser() as browser:
        listing = browser.load(f"{pages.base}/delta/tables")
        pages.keep(browser, "delta-ui-tables.png")
        timeline = browser.load(f"{pages.base}/delta/tables/{table_id(uri)}")
        pages.keep(browser, "delta-ui-table.png")
    assert f'data-table-id="{table_id(uri)}"' in listing
    assert "cannot be read" in listing  # the missing table: one line, the page still there
    rows = _Rows()
    rows.feed(timeline)
    assert sorted(rows.rows) == [0, 1, 2, 3, 4]
    for version in (0, 1):  # delta-rs's
        assert "other-engine" in rows.rows[version]["classes"] and rows.rows[version]["link"] is None
    history = {h["version"]: h for h in RsTable(pages.table).history()}
    for version, task_id in zip((2, 3, 4), TASKS):
        assert rows.rows[version]["link"] == task_instance_path(DAG_ID, pages.run_id, task_id)
        token = history[version]["tags"]["airflow.operationToken"]  # delta-rs reads the same commit
        assert parse_operation_token(token) == (DAG_ID, task_id, pages.run_id, -1)
    metrics = {v: history[v].get("operationMetrics", {}) for v in history}
    cells = {v: {k: t.replace(",", "") for k, t in rows.rows[v]["cells"].items()} for v in rows.rows}
    assert cells[2]["rows-written"] == str(metrics[2]["numOutputRows"]) == "3"
    assert cells[3]["rows-changed"] == str(metrics[3]["numUpdatedRows"]) == "1"
    assert cells[0]["rows-written"] == str(metrics[0]["num_added_rows"]) == "2"
    assert [history[v]["operation"] for v in (2, 3, 4)] == ["WRITE", "UPDATE", "OPTIMIZE"]


def test_the_extra_link_opens_the_version_page(pages: Pages) -> None:
    uri = table_asset_uri(pages.table)
    (raw,) = pages.deployment.query(
        "SELECT value FROM xcom WHERE dag_id = ? AND task_id = 'update' AND key = ?",
        DAG_ID,
        DeltaVersionLink().xcom_key,
    )[0]
    link = json.loads(raw) if raw.startswith('"') else raw
    assert link == f"/delta/tables/{table_id(uri)}/versions/3"
    with pages.browser() as browser:
        page = browser.load(f"{pages.base}{link}")
        pages.keep(browser, "delta-ui-version.png")
    assert "Version 3 of" in page and 'id="commit-info"' in page
    assert 'id="next-version"' in page and link.replace("/versions/3", "/versions/4") in page
    latest = pages.api(link.replace("/versions/3", "/versions/4"), pages.token)
    assert "Version 4 of" in latest and 'id="previous-version"' in latest
    assert 'id="next-version"' not in latest and "/versions/5" not in latest  # none past the latest
    api = json.loads(pages.api(f"/delta/api/tables/{table_id(uri)}/versions/3", pages.token))
    at_3 = RsTable(pages.table, version=3)
    assert api["describe"]["numFiles"] == len(at_3.file_uris())
    assert api["describe"]["sizeInBytes"] == sum(pa.table(at_3.get_add_actions())["size_bytes"].to_pylist())
    assert (api["numAdded"], api["numRemoved"]) == (1, 1)  # the file with id 1, rewritten
    assert api["latestVersion"] == 4


def test_airflow_s_navigation_lists_the_delta_pages(pages: Pages) -> None:
    """The plugin came through the package's entry point, and its view is in the UI's navigation."""
    plugins = json.loads(pages.api("/api/v2/plugins", pages.token))["plugins"]
    delta = next(p for p in plugins if p["name"] == "delta")
    (view,) = delta["external_views"]
    assert (view["name"], view["href"], view["destination"]) == ("Delta tables", "/delta/tables", "nav")
    assert delta["source"].startswith("airflow-delta-provider")  # the entry point's distribution
    assert [(a["url_prefix"], a["name"]) for a in delta["fastapi_apps"]] == [("/delta", "Delta tables")]


def test_a_user_who_may_not_read_the_dag_does_not_see_its_table(pages: Pages) -> None:
    """The deployment's auth manager lets the outsider read no DAG of this module (tests/deployment/auth_manager.py)."""
    outsider = pages.deployment.token(OUTSIDER)
    orders = table_id(table_asset_uri(pages.table))
    listed = {t["id"] for t in json.loads(pages.api("/delta/api/tables", outsider))["tables"]}
    assert orders not in listed and table_id(pages.s3_uri) in listed  # the table listed by hand is everyone's
    assert orders in {t["id"] for t in json.loads(pages.api("/delta/api/tables", pages.token))["tables"]}
    for path in (
        f"/delta/tables/{orders}",
        f"/delta/api/tables/{orders}/versions",
        f"/delta/tables/{orders}/versions/3",
    ):
        with pytest.raises(urllib.error.HTTPError) as hidden:
            pages.api(path, outsider)
        assert hidden.value.code == 404, path


def test_requests_without_credentials_are_refused(pages: Pages) -> None:
    for path in (
        "/delta/api/tables",
        "/delta/tables",
        f"/delta/api/tables/{table_id(table_asset_uri(pages.table))}/versions",
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            pages.api(path)
        assert refused.value.code == 401, path
    with pytest.raises(urllib.error.HTTPError) as refused:
        pages.api("/delta/api/tables", token="not-a-token")
    assert refused.value.code in (401, 403)


def test_a_table_read_with_a_connection_shows_no_secret(pages: Pages) -> None:
    tables = json.loads(pages.api("/delta/api/tables", pages.token))["tables"]
    s3 = next(t for t in tables if t["uri"] == pages.s3_uri)
    assert s3["latestVersion"] == 0 and s3["listedByHand"]
    missing = next(t for t in tables if t["uri"].endswith("/missing"))
    assert "unreachable" in missing and "\n" not in missing["unreachable"]
    texts = [json.dumps(tables)]
    for t in (s3, missing):
        for path in ("", "/versions/0", "/health"):
            texts.append(pages.api(f"/delta/tables/{t['id']}{path}", pages.token))
        for path in ("/versions", "/versions/0", "/health"):
            texts.append(pages.api(f"/delta/api/tables/{t['id']}{path}", pages.token))
    with pages.browser() as browser:
        texts.append(browser.load(f"{pages.base}/delta/tables"))
        texts.append(browser.load(f"{pages.base}/delta/tables/{s3['id']}"))
    for text in texts:
        assert S3_SECRET not in text and "moto-key-id" not in text
    logs = "".join(p.read_text(errors="replace") for p in pages.deployment.logs.glob("*.log"))
    assert S3_SECRET not in logs
