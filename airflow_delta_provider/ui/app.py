"""The plugin's FastAPI app, mounted by the api-server at ``/delta``.

Pages (HTML) and their JSON API:

================================  ==========================================
``/tables``                       ``/api/tables``
``/tables/{id}?before=&limit=``   ``/api/tables/{id}/versions?before=&limit=``
``/tables/{id}/versions/{v}``     ``/api/tables/{id}/versions/{v}``
``/tables/{id}/health``           ``/api/tables/{id}/health``
================================  ==========================================

Every route authenticates as Airflow's own routes do (its ``get_user``
dependency: the UI's session cookie or a bearer token; 401 without), and asks
the auth manager which DAGs the user may read: a table is shown only to users
who may read a DAG that wrote it (:meth:`~.tables.TableEntry.visible_to`).
A table the user may not see is answered as one that does not exist (404).
"""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from airflow_delta_provider.delta.timeline.entries import MAX_PAGE_SIZE, PAGE_SIZE
from airflow_delta_provider.ui import render
from airflow_delta_provider.ui.reads import TableReader, Unreachable, summaries
from airflow_delta_provider.ui.tables import TableEntry, known_tables


class Viewer:
    """What the signed-in user may see: the DAGs they may read, the tables of those DAGs."""

    def __init__(self, user: GetUserDep) -> None:
        self.user = user
        self.readable_dag_ids: set[str] = get_auth_manager().get_authorized_dag_ids(user=user, method="GET")

    def tables(self) -> dict[str, TableEntry]:
        return {k: t for k, t in known_tables().items() if t.visible_to(self.readable_dag_ids)}

    def table(self, table_id: str) -> TableEntry:
        found = self.tables().get(table_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no Delta table {table_id}")
        return found


ViewerDep = Annotated[Viewer, Depends()]
Before = Annotated[int | None, Query(ge=1)]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]


def create_app(reader: TableReader | None = None) -> FastAPI:
    """The app; ``reader`` holds the caches (one per api-server worker)."""
    reads = reader or TableReader()
    app = FastAPI(title="Delta tables", description="Delta Lake tables of this Airflow deployment")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        from airflow_delta_provider.utils.ui_paths import tables_path

        return RedirectResponse(tables_path())

    # --- pages ---------------------------------------------------------------------

    @app.get("/tables", response_class=HTMLResponse)
    def tables(viewer: ViewerDep) -> str:
        found = viewer.tables()
        listed = summaries(reads, found)
        return render.tables_page([(found[k], s) for k, s in listed.items()])

    @app.get("/tables/{table_id}", response_class=HTMLResponse)
    def table(viewer: ViewerDep, table_id: str, before: Before = None, limit: Limit = PAGE_SIZE) -> str:
        entry = viewer.table(table_id)
        try:
            page = reads.timeline(entry, before, limit)
        except Unreachable as exc:
            return render.unreachable_page(entry, exc)
        return render.table_page(entry, page, viewer.readable_dag_ids, limit)

    @app.get("/tables/{table_id}/versions/{version}", response_class=HTMLResponse)
    def version(viewer: ViewerDep, table_id: str, version: int) -> str:
        entry = viewer.table(table_id)
        try:
            doc = _version(reads, entry, version)
        except Unreachable as exc:
            return render.unreachable_page(entry, exc)
        return render.version_page(entry, doc, viewer.readable_dag_ids)

    @app.get("/tables/{table_id}/health", response_class=HTMLResponse)
    def health(viewer: ViewerDep, table_id: str) -> str:
        from airflow_delta_provider.delta.health.page import render_page

        entry = viewer.table(table_id)
        try:
            summary = reads.summary(entry)
        except Unreachable as exc:
            return render.unreachable_page(entry, exc)
        return render_page(summary.report, summary.decisions)

    # --- API -----------------------------------------------------------------------

    @app.get("/api/tables")
    def api_tables(viewer: ViewerDep) -> dict[str, Any]:
        found = viewer.tables()
        out = []
        for key, summary in summaries(reads, found).items():
            doc = _table_doc(found[key])
            doc.update({"unreachable": str(summary)} if isinstance(summary, Exception) else summary.to_dict())
            out.append(doc)
        return {"tables": sorted(out, key=lambda d: d["uri"])}

    @app.get("/api/tables/{table_id}/versions")
    def api_versions(viewer: ViewerDep, table_id: str, before: Before = None, limit: Limit = PAGE_SIZE) -> Any:
        entry = viewer.table(table_id)
        try:
            return {**_table_doc(entry), **reads.timeline(entry, before, limit).to_dict()}
        except Unreachable as exc:
            return _unreachable(entry, exc)

    @app.get("/api/tables/{table_id}/versions/{version}")
    def api_version(viewer: ViewerDep, table_id: str, version: int) -> Any:
        entry = viewer.table(table_id)
        try:
            return {**_table_doc(entry), **_version(reads, entry, version)}
        except Unreachable as exc:
            return _unreachable(entry, exc)

    @app.get("/api/tables/{table_id}/health")
    def api_health(viewer: ViewerDep, table_id: str) -> Any:
        entry = viewer.table(table_id)
        try:
            summary = reads.summary(entry)
        except Unreachable as exc:
            return _unreachable(entry, exc)
        return {**_table_doc(entry), "report": summary.report, "decisions": summary.decisions}

    return app


def _version(reads: TableReader, entry: TableEntry, version: int) -> dict[str, Any]:
    from airflow_delta_provider.delta.errors import VersionNotFoundError

    try:
        return reads.version(entry, version)
    except VersionNotFoundError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None


def _table_doc(entry: TableEntry) -> dict[str, Any]:
    return {"id": entry.id, "uri": entry.uri, "dagIds": sorted(entry.dag_ids), "listedByHand": entry.by_hand}


def _unreachable(entry: TableEntry, exc: Unreachable) -> JSONResponse:
    return JSONResponse({**_table_doc(entry), "unreachable": str(exc)}, status_code=200)


__all__ = ["create_app"]
