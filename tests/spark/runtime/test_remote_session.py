"""The Spark Connect session helpers, and what the Connect path may import."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from airflow_delta_provider.spark.runtime import remote_session
from airflow_delta_provider.spark.runtime.remote_session import (
    CONNECT_MODE_VARIABLE,
    _with_user_agent,
    connect_mode,
    redact_url,
    unreachable_reason,
)

SPARK_PACKAGE = Path(remote_session.__file__).resolve().parent


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sc://host:15002", "sc://host:15002/;user_agent=airflow-delta-provider"),
        ("sc://host:15002/", "sc://host:15002/;user_agent=airflow-delta-provider"),
        ("sc://h:1/;token=t;use_ssl=true", "sc://h:1/;token=t;use_ssl=true;user_agent=airflow-delta-provider"),
        ("sc://h:1/;user_agent=mine", "sc://h:1/;user_agent=mine"),
    ],
)
def test_sessions_name_their_client(url: str, expected: str) -> None:
    assert _with_user_agent(url) == expected


def test_a_url_is_shown_without_its_parameters() -> None:
    assert redact_url("sc://h:1/;user_id=a;token=s3cr3t") == "sc://h:1"


@pytest.mark.parametrize("before", [None, "0", "1"])
def test_connect_mode_is_restored_after_the_block(monkeypatch: pytest.MonkeyPatch, before: str | None) -> None:
    if before is None:
        monkeypatch.delenv(CONNECT_MODE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(CONNECT_MODE_VARIABLE, before)
    with pytest.raises(RuntimeError), connect_mode():
        assert os.environ[CONNECT_MODE_VARIABLE] == "1"
        raise RuntimeError("the command failed")
    assert os.environ.get(CONNECT_MODE_VARIABLE) == before


def test_only_an_unanswered_call_is_unreachable() -> None:
    wrapped = RuntimeError(
        "<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n"
        '\tdetails = "failed to connect to all addresses"\n>'
    )
    assert unreachable_reason(wrapped) == "UNAVAILABLE: failed to connect to all addresses"
    try:
        raise ValueError("[CAST_INVALID_INPUT] bad value") from wrapped
    except ValueError as chained:
        assert unreachable_reason(chained) == "UNAVAILABLE: failed to connect to all addresses"
    assert unreachable_reason(ValueError("[UNRESOLVED_COLUMN] nosuchcol")) is None


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    "path", sorted(SPARK_PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(SPARK_PACKAGE).as_posix()
)
def test_no_spark_module_needs_py4j_to_import(path: Path) -> None:
    """A Spark Connect client may have no py4j (``pyspark-client`` alone): the
    engine imports it only inside the classic-only branches."""
    assert "py4j" not in _module_level_imports(path)
