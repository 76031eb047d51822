"""The Unity Catalog client against both servers' shapes.

Every answer the reference Java server 0.6.0 gave (recorded in
``../shared/uc-reference/unitycatalog-0.6.0-java-server.json``) is replayed
through the client's own calls, over an httpx transport that answers as the
server did; and the client's requests are checked against the recorded ones.
olai-uc-server's shapes (``{}`` for an empty list, ``errorCode``, times as
strings) are checked the same way, and against the real server in
``test_binding.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_delta_provider.delta.catalog.reference import parse_reference
from airflow_delta_provider.delta.catalog.unity import UnityCatalogClient, answer, tables_of, vended
from airflow_delta_provider.delta.errors import (
    CatalogAccessDeniedError,
    CatalogError,
    CatalogTableNotFoundError,
    CatalogUnavailableError,
)

RECORDED = Path(__file__).resolve().parents[4] / "shared" / "uc-reference" / "unitycatalog-0.6.0-java-server.json"
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


def recorded() -> list[dict[str, Any]]:
    if not RECORDED.exists():
        pytest.skip(f"the recorded answers are not at {RECORDED}")
    return json.loads(RECORDED.read_text())


def replaying(entry: dict[str, Any], seen: list[httpx.Request]) -> UnityCatalogClient:
    """A client whose every call gets ``entry``'s recorded answer."""

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = entry["response"]
        text = body if isinstance(body, str) else json.dumps(body)
        return httpx.Response(entry["status"], text=text)

    return UnityCatalogClient("http://uc.test", "t0ken", transport=httpx.MockTransport(reply))


def replay(entry: dict[str, Any]) -> Any:
    """Run the client call that ``entry`` records; what it returned (or the error it raised)."""
    seen: list[httpx.Request] = []
    client = replaying(entry, seen)
    method, path, request = entry["method"], entry["path"], entry["request"]
    try:
        if path.startswith("/api/2.1/unity-catalog/tables/") and method == "GET":
            return client.get(parse_reference("uc://" + path.rsplit("/", 1)[1]))
        if path.endswith("/temporary-table-credentials"):
            entry_ = type("E", (), {"table_id": request["table_id"]})()
            creds = client.table_credentials(parse_reference("uc://a.b.c"), entry_, request["operation"] != "READ")
            assert json.loads(seen[0].content) == request  # the body the reference server was sent
            return creds
        if path.endswith("/temporary-path-credentials"):
            creds = client.path_credentials(request["url"], request["operation"] != "PATH_READ")
            assert json.loads(seen[0].content)["url"] == request["url"]
            return creds
        if path.endswith("/tables") and method == "POST":
            ref = parse_reference(f"uc://{request['catalog_name']}.{request['schema_name']}.{request['name']}")
            client.register(ref, request["storage_location"], SCHEMA, [])
            sent = json.loads(seen[0].content)
            assert {k: v for k, v in sent.items() if k != "columns"} == {
                k: v
                for k, v in request.items()
                if k not in ("columns", "properties")  # the recording's own
            }
            assert [c["name"] for c in sent["columns"]] == ["id"]
            assert {k: sent["columns"][0][k] for k in ("type_name", "type_text", "position", "nullable")} == {
                k: request["columns"][0][k] for k in ("type_name", "type_text", "position", "nullable")
            }
            return "registered"
        return client.request(method, path.removeprefix("/api/2.1/unity-catalog"), entry["note"], request)
    except CatalogError as exc:
        return exc
    finally:
        assert all(r.headers["authorization"] == "Bearer t0ken" for r in seen)
        client.close()


def test_every_recorded_answer_of_the_reference_server() -> None:
    entries = recorded()
    assert len(entries) >= 20
    for entry in entries:
        got = replay(entry)
        status, response = entry["status"], entry["response"]
        note = entry["note"]
        if status == 404 and response.get("error_code") == "TABLE_NOT_FOUND" and entry["method"] == "GET":
            assert got is None, note  # a missing table: no entry, so a write may create it
        elif status == 404:
            assert isinstance(got, CatalogTableNotFoundError), note
            assert response["error_code"] in str(got), note
        elif status >= 400:
            assert type(got) is CatalogError, note
            assert response["error_code"] in str(got) and response["message"] in str(got), note
        elif "credentials" in entry["path"]:
            assert got.options == {} and got.expires_at is None, note  # local paths: every cloud credential null
        elif entry["method"] == "GET" and "/tables/" in entry["path"]:
            assert got.location == response["storage_location"] and got.is_delta, note
            assert got.table_id == response["table_id"], note
            assert got.columns == tuple((c["name"], c["type_text"]) for c in response["columns"]), note
        elif "tables?" in entry["path"]:
            assert tables_of(got) == response["tables"], note
        elif entry["method"] == "DELETE":
            assert got == {}, note  # "200 OK" as plain text
        elif got != "registered":
            assert got == response, note


def test_the_rust_servers_shapes() -> None:
    assert tables_of(answer(200, "{}", "list", "u")) == []
    with pytest.raises(CatalogTableNotFoundError, match="RESOURCE_NOT_FOUND"):
        answer(404, '{"errorCode":"RESOURCE_NOT_FOUND","message":"The requested resource does not exist."}', "x", "u")
    with pytest.raises(CatalogError, match="INVALID_PARAMETER_VALUE: Invalid argument"):
        answer(400, '{"errorCode":"INVALID_PARAMETER_VALUE","message":"Invalid argument"}', "x", "u")
    sas = vended(
        {
            "expiration_time": "1796191541373",
            "url": "abfss://c@a.dfs.core.windows.net/t",
            "azure_user_delegation_sas": {"sas_token": "sv=2020&sig=abc"},
        },
        True,
    )
    assert sas.options == {"AZURE_STORAGE_SAS_KEY": "sv=2020&sig=abc"}
    assert sas.expires_at == pytest.approx(1796191541.373) and sas.writable


def test_aws_credentials_and_errors_by_status() -> None:
    creds = vended(
        {
            "aws_temp_credentials": {"access_key_id": "AK", "secret_access_key": "SK", "session_token": "ST"},
            "expiration_time": 1796191541000,
        },
        False,
    )
    assert creds.options == {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "ST"}
    assert creds.expires_within(10**12) and not creds.expires_within(0, now=0)
    with pytest.raises(CatalogAccessDeniedError):
        answer(403, '{"error_code":"PERMISSION_DENIED","message":"no MODIFY on table"}', "x", "u")
    with pytest.raises(CatalogAccessDeniedError):
        answer(401, "", "x", "u")
    with pytest.raises(CatalogUnavailableError):
        answer(503, "busy", "x", "u")
