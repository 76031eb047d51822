"""A Unity Catalog client: the REST API of the open-source server and of Databricks.

The calls a catalog-aware Delta writer needs, over ``httpx`` (the
``[unity-catalog]`` extra): a table by full name, temporary table and path
credentials, an external table's creation, and its columns' copy.

PyPI's ``unitycatalog-client`` is not used: its models are strict, and the
servers disagree on the wire. The reference Java server answers an empty list
with ``{"tables": []}``, an error with ``error_code`` and a time as a number;
``olai-uc-server`` answers ``{}``, ``errorCode`` and a time as a string. This
module reads both (``tests/delta/catalog/test_unity_replay.py`` replays every
recorded answer of the reference server through it).

The REST API has no call that changes a table's columns: an external table's
entry is dropped and created again with the new columns (dropping an external
table's entry leaves its data alone).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from airflow_delta_provider.delta.catalog.columns import unity_columns
from airflow_delta_provider.delta.catalog.model import CatalogEntry, VendedCredentials
from airflow_delta_provider.delta.catalog.reference import CatalogReference
from airflow_delta_provider.delta.errors import (
    CatalogAccessDeniedError,
    CatalogError,
    CatalogTableNotFoundError,
    CatalogUnavailableError,
    InvalidArgumentError,
)

API = "/api/2.1/unity-catalog"
#: Error codes of a missing securable (the Java server's, then olai-uc-server's).
_NOT_FOUND = frozenset({"TABLE_NOT_FOUND", "SCHEMA_NOT_FOUND", "CATALOG_NOT_FOUND", "NOT_FOUND", "RESOURCE_NOT_FOUND"})
_DENIED = frozenset({"PERMISSION_DENIED", "UNAUTHENTICATED", "UNAUTHORIZED"})


class UnityCatalogClient:
    """Unity Catalog at ``url`` (``http://host:port``, or a Databricks workspace URL).

    :param token: The bearer token (a personal access token); None: no
        ``Authorization`` header (an open development server).
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 10.0, transport: Any = None) -> None:
        base = url.rstrip("/")
        if not base.endswith(API):
            base += API
        self._own = transport is not None
        self._http = _http_client(base, token, timeout, transport) if self._own else _shared(base, token, timeout)
        self.url = url

    def close(self) -> None:
        """Close a client of its own; the process's pooled one stays open for the next name."""
        if self._own:
            self._http.close()

    # --- the HTTP layer ---------------------------------------------------------------

    def request(self, method: str, path: str, what: str, body: Mapping[str, Any] | None = None) -> Any:
        """The decoded answer to one call; the typed error of a failed one (``what`` names it)."""
        import httpx

        try:
            response = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise CatalogUnavailableError(f"Unity Catalog at {self.url} is unreachable ({what}): {exc}") from None
        return answer(response.status_code, response.text, what, self.url)

    # --- tables -----------------------------------------------------------------------

    def get(self, ref: CatalogReference) -> CatalogEntry | None:
        try:
            table = self.request("GET", f"/tables/{_name(ref.name)}", f"table {ref.name}")
        except CatalogTableNotFoundError as exc:
            if "SCHEMA_NOT_FOUND" in str(exc) or "CATALOG_NOT_FOUND" in str(exc):
                raise
            return None
        return table_entry(table)

    def default_location(self, ref: CatalogReference) -> str:
        catalog, schema = ref.namespace
        found = self.request("GET", f"/schemas/{_name(f'{catalog}.{schema}')}", f"schema {catalog}.{schema}")
        root = found.get("storage_root")
        if not root:
            root = self.request("GET", f"/catalogs/{_name(catalog)}", f"catalog {catalog}").get("storage_root")
        if not root:
            raise InvalidArgumentError(
                f"{ref}: neither schema {catalog}.{schema} nor catalog {catalog} has a storage root; "
                "give the new table's location"
            )
        return f"{str(root).rstrip('/')}/{ref.table}"

    def register(
        self, ref: CatalogReference, location: str, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        catalog, schema_name = ref.namespace
        body = {
            "name": ref.table,
            "catalog_name": catalog,
            "schema_name": schema_name,
            "table_type": "EXTERNAL",
            "data_source_format": "DELTA",
            "storage_location": location,
            "columns": unity_columns(schema, partition_columns),
        }
        self.request("POST", "/tables", f"create table {ref.name}", body)

    def update_columns(
        self, ref: CatalogReference, entry: CatalogEntry, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        self.request("DELETE", f"/tables/{_name(ref.name)}", f"drop the entry of {ref.name} to update its columns")
        try:
            self.register(ref, entry.location, schema, partition_columns)
        except CatalogError:
            self.register(ref, entry.location, schema, partition_columns)  # once more: the entry must come back

    # --- credentials ------------------------------------------------------------------

    def table_credentials(self, ref: CatalogReference, entry: CatalogEntry, write: bool) -> VendedCredentials | None:
        body = {"table_id": entry.table_id, "operation": "READ_WRITE" if write else "READ"}
        access = "read-write" if write else "read"
        return vended(
            self.request("POST", "/temporary-table-credentials", f"{access} credentials of {ref.name}", body), write
        )

    def path_credentials(self, location: str, write: bool) -> VendedCredentials | None:
        body = {"url": location, "operation": "PATH_CREATE_TABLE" if write else "PATH_READ"}
        access = "create-table" if write else "read"
        return vended(
            self.request("POST", "/temporary-path-credentials", f"{access} credentials of {location}", body), write
        )


#: One pooled HTTP client per server and token in a process: building one costs more than the
#: calls (its TLS context), and a kept-alive connection makes each call a millisecond on loopback.
_POOL: dict[tuple[str, str | None, float], Any] = {}
_POOL_LOCK = threading.Lock()


def _http_client(base: str, token: str | None, timeout: float, transport: Any = None) -> Any:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=timeout, transport=transport)


def _shared(base: str, token: str | None, timeout: float) -> Any:
    key = (base, token, timeout)
    with _POOL_LOCK:
        client = _POOL.get(key)
        if client is None or client.is_closed:
            client = _POOL[key] = _http_client(base, token, timeout)
        return client


def _name(full_name: str) -> str:
    return quote(full_name, safe="")


def answer(status: int, text: str, what: str, url: str) -> Any:
    """The JSON of a successful answer (``{}`` for an empty body or a plain ``200 OK``);
    for an error, the typed error its status and code call for."""
    import json

    try:
        body = json.loads(text) if text.strip() else {}
    except ValueError:
        body = text.strip()
    if status < 300:
        return body if isinstance(body, (dict, list)) else {}
    code, message = error_of(body)
    detail = f"{code}: {message}" if code else (message or f"HTTP {status}")
    text_of = f"Unity Catalog ({what}): {detail}"
    if status == 404 or code in _NOT_FOUND:
        raise CatalogTableNotFoundError(text_of)
    if status in (401, 403) or code in _DENIED:
        raise CatalogAccessDeniedError(text_of)
    if status >= 500 or status == 429:
        raise CatalogUnavailableError(f"Unity Catalog at {url} failed ({what}): {detail}")
    raise CatalogError(text_of)


def error_of(body: Any) -> tuple[str, str]:
    """``(error code, message)`` of an error answer, in either server's spelling."""
    if not isinstance(body, dict):
        return "", str(body or "")
    code = body.get("error_code") or body.get("errorCode") or ""
    return str(code), str(body.get("message") or "")


def table_entry(table: Mapping[str, Any]) -> CatalogEntry:
    """The entry of a ``TableInfo`` answer."""
    fmt = str(table.get("data_source_format") or "")
    columns = tuple((str(c.get("name")), str(c.get("type_text") or "")) for c in table.get("columns") or ())
    return CatalogEntry(
        location=str(table.get("storage_location") or ""),
        is_delta=fmt.upper() == "DELTA",
        columns=columns,
        table_id=table.get("table_id"),
        kind=f"{table.get('table_type') or 'table'} {fmt or 'of no format'}",
    )


def tables_of(listing: Any) -> list[dict[str, Any]]:
    """The tables of a list answer: ``{"tables": [...]}``, or ``{}`` for none."""
    return list((listing or {}).get("tables") or ())


def vended(credentials: Mapping[str, Any], write: bool) -> VendedCredentials:
    """A ``TemporaryCredentials`` answer as store settings in the core's names."""
    options: dict[str, str] = {}
    aws = credentials.get("aws_temp_credentials")
    azure = credentials.get("azure_user_delegation_sas")
    gcp = credentials.get("gcp_oauth_token")
    if aws:
        options["AWS_ACCESS_KEY_ID"] = aws["access_key_id"]
        options["AWS_SECRET_ACCESS_KEY"] = aws["secret_access_key"]
        if aws.get("session_token"):
            options["AWS_SESSION_TOKEN"] = aws["session_token"]
    elif azure:
        options["AZURE_STORAGE_SAS_KEY"] = str(azure["sas_token"]).lstrip("?")
    elif gcp:
        raise CatalogError("Unity Catalog vended a GCS OAuth token, which the storage layer cannot use yet")
    expiration = credentials.get("expiration_time")
    expires_at = None if expiration in (None, "", 0, "0") else int(expiration) / 1000
    return VendedCredentials(options, expires_at, write)


__all__ = ["API", "UnityCatalogClient", "answer", "error_of", "table_entry", "tables_of", "vended"]
