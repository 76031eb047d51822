"""Where APPEND's and MERGE's rows come from: files at a path, or a SQL query over views.

A source is either a path read in one of :data:`SOURCE_FORMATS`, or a query
(``source_sql``) over named views (``source_views``), each view a path read
in one of those formats, Delta at an optional version. The views exist for
the query only. This module checks the views' description, with no Spark, so
an operator refuses a bad one when the DAG is parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.errors import InvalidArgumentError

#: Formats a source, or a view of a SQL source, is read in.
SOURCE_FORMATS = ("parquet", "csv", "json", "orc", "delta")
#: The keys of one view: ``path`` and ``format`` are required.
VIEW_KEYS = ("path", "format", "version", "options")
# A view name the query can use unquoted.
_VIEW_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class SourceView:
    """One view of a SQL source: ``path`` read as ``format``; a Delta table at
    ``version`` (default: its latest); ``options`` for Spark's reader."""

    name: str
    path: str
    format: str
    version: int | None = None
    options: tuple[tuple[str, str], ...] = ()


def parse_source_views(value: str | Mapping[str, Any] | None) -> tuple[SourceView, ...]:
    """The views of ``value``: a mapping (or its JSON text) from view name to
    ``{"path", "format", "version"?, "options"?}``. Raises InvalidArgumentError naming
    the view and the problem."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"source_views is not valid JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"source_views must map view names to {{path, format}}, not {type(value).__name__}")
    names = [str(name).lower() for name in value]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"source_views names a view twice (names are case-insensitive): {', '.join(value)}")
    return tuple(_view(str(name), spec) for name, spec in value.items())


def views_json(views: str | Mapping[str, Any] | None) -> str | None:
    """``views`` as the request's JSON text (a mapping is dumped, text is kept)."""
    if views is None or isinstance(views, str):
        return views
    return json.dumps(dict(views))


def check_source(source: str | None, source_sql: str | None, source_views: str | None) -> None:
    """A request's source rules: a path or a query, not both, and views only with a query."""
    if (source is None) == (source_sql is None):
        raise InvalidArgumentError("give the source as a path (source) or as a query (source_sql), exactly one")
    if source_sql is not None and not source_sql.strip():
        raise InvalidArgumentError("source_sql is empty")
    if source_views is not None and source_sql is None:
        raise InvalidArgumentError("source_views name the views of source_sql: give source_sql too")
    parse_source_views(source_views)


def _view(name: str, spec: Any) -> SourceView:
    if not _VIEW_NAME_RE.match(name):
        raise InvalidArgumentError(
            f"view name {name!r} must be letters, digits and underscores, not starting with a digit"
        )
    if not isinstance(spec, Mapping):
        raise InvalidArgumentError(f"view {name}: give {{path, format}}, not {spec!r}")
    unknown = sorted(set(spec) - set(VIEW_KEYS))
    if unknown:
        raise InvalidArgumentError(
            f"view {name}: unknown key(s) {', '.join(unknown)}; a view has {', '.join(VIEW_KEYS)}"
        )
    path, format = spec.get("path"), spec.get("format")
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"view {name}: path is required")
    if format not in SOURCE_FORMATS:
        raise InvalidArgumentError(f"view {name}: format must be one of {SOURCE_FORMATS}, not {format!r}")
    version = spec.get("version")
    if version is not None:
        if format != "delta":
            raise InvalidArgumentError(f"view {name}: a version needs format delta, not {format}")
        if isinstance(version, bool) or not isinstance(version, (int, str)) or not str(version).isdigit():
            raise InvalidArgumentError(f"view {name}: version must be a non-negative integer, not {version!r}")
        version = int(version)
    options = spec.get("options") or {}
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"view {name}: options must map reader options to values, not {options!r}")
    return SourceView(name, path, format, version, tuple((str(k), str(v)) for k, v in options.items()))


__all__ = ["SOURCE_FORMATS", "VIEW_KEYS", "SourceView", "check_source", "parse_source_views", "views_json"]
