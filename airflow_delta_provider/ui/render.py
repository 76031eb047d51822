"""The Delta pages as server-rendered HTML: no script, nothing loaded from elsewhere.

Airflow's UI shows them in its frame (the plugin's external view); links to
Airflow's own pages (DAG runs, task instances) open in the whole window
(``target="_top"``). Elements carry ids and classes the tests and a user's
browser extensions can rely on: ``tr.table`` (``data-table-id``) on the
tables page, ``tr.version`` (``data-version``; ``other-engine`` for a commit
no task of this deployment made) and ``a.task-instance`` on a table's page.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.delta.cli_format import iso_utc
from airflow_delta_provider.delta.health.text import human_bytes
from airflow_delta_provider.hooks.delta_operation import parse_operation_token
from airflow_delta_provider.utils.ui_paths import table_path, tables_path, task_instance_path, version_path

if TYPE_CHECKING:
    from airflow_delta_provider.delta.timeline.entries import TimelineEntry, TimelinePage
    from airflow_delta_provider.ui.reads import TableSummary, Unreachable
    from airflow_delta_provider.ui.tables import TableEntry

_STYLE = """
body{font-family:sans-serif;margin:20px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:24px}
table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:4px 8px;font-size:13px;text-align:left}
td.n{text-align:right}pre{background:#f4f6f8;padding:10px;font-size:12px;overflow-x:auto}
.badge{border-radius:8px;padding:1px 8px;font-size:12px;color:#fff}.ok{background:#2ca02c}.due{background:#e67e00}
.unreachable{color:#b00}.other-engine{background:#fff6e0}.muted{color:#777}nav a{margin-right:12px}
"""


def tables_page(rows: list[tuple[TableEntry, TableSummary | Unreachable]]) -> str:
    """The tables a user may see, each with its latest version and health."""
    head = "<tr><th>table</th><th>version</th><th>last write</th><th>last OPTIMIZE</th><th>last VACUUM</th>"
    head += "<th>files</th><th>bytes</th><th>health</th><th>written by DAGs</th></tr>"
    body = []
    for table, summary in sorted(rows, key=lambda r: r[0].uri):
        name = f'<td><a href="{_e(table_path(table.uri))}">{_e(table.uri)}</a></td>'
        dags = f"<td>{_e(', '.join(sorted(table.dag_ids)) or ('listed by hand' if table.by_hand else ''))}</td>"
        row = f'<tr class="table" data-table-id="{table.id}">{name}'
        if isinstance(summary, Exception):
            body.append(f'{row}<td colspan="7" class="unreachable">cannot be read: {_e(summary)}</td>{dags}</tr>')
            continue
        r = summary.report
        body.append(
            f"{row}<td class='n'>{summary.latest}</td><td>{_when(summary.last_write)}</td>"
            f"<td>{_version_when(r['lastOptimize'])}</td><td>{_version_when(r['lastVacuum'])}</td>"
            f"<td class='n'>{r['numFiles']}</td><td class='n'>{_e(human_bytes(r['sizeInBytes']))}</td>"
            f"<td>{badge(summary)}</td>{dags}</tr>"
        )
    listing = f"<table id='tables'>{head}{''.join(body)}</table>" if body else "<p>No Delta table yet.</p>"
    return _page("Delta tables", listing)


def badge(summary: TableSummary) -> str:
    """Healthy, or the maintenance steps the health report's thresholds call for."""
    due = summary.due
    if not due:
        return '<span class="badge ok">healthy</span>'
    return f'<span class="badge due" title="due: {_e(", ".join(due))}">{_e(", ".join(due))} due</span>'


def table_page(table: TableEntry, page: TimelinePage, readable_dag_ids: set[str], limit: int) -> str:
    """A table's timeline: one row per version, linked to the task instance that wrote it."""
    head = "<tr><th>version</th><th>time</th><th>operation</th><th>rows written</th><th>rows changed</th>"
    head += "<th>rows deleted</th><th>bytes written</th><th>duration</th><th>written by</th></tr>"
    rows = "".join(_version_row(table, e, readable_dag_ids) for e in page.entries)
    older = ""
    if page.older is not None:
        query = urlencode({"before": page.older, "limit": limit})
        older = f'<p><a id="older" href="{_e(table_path(table.uri))}?{_e(query)}">older versions</a></p>'
    nav = f'<nav><a href="{_e(tables_path())}">all tables</a><a href="{_e(table_path(table.uri))}/health">health report</a></nav>'
    body = f"{nav}<p>Latest version {page.latest}.</p><table id='timeline'>{head}{rows}</table>{older}"
    return _page(f"Delta table {table.uri}", body)


def version_page(table: TableEntry, doc: dict[str, Any], readable_dag_ids: set[str]) -> str:
    """One version: who wrote it, its commitInfo, files, schema change and the table as of it."""
    info = doc["commitInfo"]
    token = info["tags"].get(TOKEN_TAG) if isinstance(info.get("tags"), dict) else None
    version = doc["version"]
    links = [f'<a href="{_e(tables_path())}">all tables</a>', f'<a href="{_e(table_path(table.uri))}">timeline</a>']
    if version > 0:
        links.append(
            f'<a id="previous-version" href="{_e(version_path(table.uri, version - 1))}">version {version - 1}</a>'
        )
    if version < doc["latestVersion"]:  # none past the latest
        links.append(
            f'<a id="next-version" href="{_e(version_path(table.uri, version + 1))}">version {version + 1}</a>'
        )
    nav = f"<nav>{''.join(links)}</nav>"
    parts = [
        nav,
        f"<p>Written by {written_by(token, info.get('engineInfo'), readable_dag_ids)}"
        f" at {_when(info.get('inCommitTimestamp', info.get('timestamp')))}.</p>",
        f"<h2>Schema change</h2>{_schema_change(doc['schemaChange'])}",
        f"<h2>Files added ({doc['numAdded']})</h2>{_files('added', doc['added'], doc['numAdded'])}",
        f"<h2>Files removed ({doc['numRemoved']})</h2>{_files('removed', doc['removed'], doc['numRemoved'])}",
        f"<h2>commitInfo</h2><pre id='commit-info'>{_e(json.dumps(info, indent=2, sort_keys=True))}</pre>",
        f"<h2>The table as of version {version}</h2>"
        f"<pre id='describe'>{_e(json.dumps(doc['describe'], indent=2, sort_keys=True))}</pre>",
    ]
    return _page(f"Version {version} of {table.uri}", "".join(parts))


def unreachable_page(table: TableEntry, error: Unreachable) -> str:
    return _page(f"Delta table {table.uri}", f'<p class="unreachable">cannot be read: {_e(error)}</p>')


def written_by(token: str | None, engine: str | None, readable_dag_ids: set[str]) -> str:
    """The task instance that committed a version (a link when the user may read its DAG),
    or the engine that wrote it."""
    parsed = parse_operation_token(token) if token else None
    if parsed is None:
        return f'<span class="engine">{_e(engine or "an unknown writer")}</span>'
    dag_id, task_id, run_id, map_index = parsed
    label = f"{dag_id} / {run_id} / {task_id}" + (f" [{map_index}]" if map_index >= 0 else "")
    if dag_id not in readable_dag_ids:
        return '<span class="muted">a task of a DAG you cannot see</span>'
    href = task_instance_path(dag_id, run_id, task_id, map_index)
    return f'<a class="task-instance" target="_top" href="{_e(href)}">{_e(label)}</a>'


def _version_row(table: TableEntry, e: TimelineEntry, readable_dag_ids: set[str]) -> str:
    cls = "version" if e.token else "version other-engine"
    return (
        f'<tr class="{cls}" data-version="{e.version}">'
        f'<td class="n"><a href="{_e(version_path(table.uri, e.version))}">{e.version}</a></td>'
        f"<td>{_when(e.timestamp)}</td><td>{_e(e.operation or '')}</td>"
        f"<td class='n rows-written'>{_n(e.rows_written)}</td><td class='n rows-changed'>{_n(e.rows_changed)}</td>"
        f"<td class='n rows-deleted'>{_n(e.rows_deleted)}</td>"
        f"<td class='n'>{'' if e.bytes_written is None else _e(human_bytes(e.bytes_written))}</td>"
        f"<td class='n'>{'' if e.duration_ms is None else f'{e.duration_ms / 1000:.1f} s'}</td>"
        f"<td>{written_by(e.token, e.engine, readable_dag_ids)}</td></tr>"
    )


def _files(kind: str, files: list[dict[str, Any]], total: int) -> str:
    if not files:
        return "<p class='muted'>none</p>"
    rows = "".join(
        f"<tr><td>{_e(f['path'])}</td><td class='n'>{_e(human_bytes(f['size']))}</td>"
        f"<td class='n'>{_n(f['numRecords'])}</td><td>{_e(json.dumps(f['partitionValues']))}</td>"
        f"<td>{'yes' if f['dataChange'] else 'no'}</td></tr>"
        for f in files
    )
    more = f"<p class='muted'>and {total - len(files)} more</p>" if total > len(files) else ""
    head = "<tr><th>path</th><th>size</th><th>rows</th><th>partition</th><th>data change</th></tr>"
    return f"<table id='{kind}'>{head}{rows}</table>{more}"


def _schema_change(change: dict[str, Any] | None) -> str:
    if change is None:
        return "<p class='muted'>none</p>"
    items = [f"<li>added {_e(n)}</li>" for n in change["added"]]
    items += [f"<li>dropped {_e(n)}</li>" for n in change["dropped"]]
    items += [f"<li>{_e(c['name'])}: {_e(c['before'])} to {_e(c['after'])}</li>" for c in change["changed"]]
    return f"<ul id='schema-change'>{''.join(items)}</ul>"


def _version_when(info: dict[str, Any] | None) -> str:
    if info is None:
        return "<span class='muted'>none recently</span>"
    return f"{info['version']} ({_when(info['timestamp'])})"


def _when(ms: Any) -> str:
    return _e(iso_utc(ms)[:19].replace("T", " ")) if isinstance(ms, int) else ""


def _n(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{_e(title)}</h1>{body}</body></html>"
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


__all__ = ["badge", "table_page", "tables_page", "unreachable_page", "version_page", "written_by"]
