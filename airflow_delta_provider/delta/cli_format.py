"""The ``table`` format of the CLI: ``history`` and ``describe`` as readable text.

Both read the same documents that the ``json`` format prints, so the two
formats never disagree. ``history`` is one line per commit, newest first, with
the columns of delta-spark's DESCRIBE HISTORY that say what happened:
operationParameters and operationMetrics as ``key=value`` pairs (metrics that
are zero are left out; the JSON format has them all). ``describe`` is a block
of ``key value`` lines, the schema, then the first :data:`MAX_FILES` files.
Times are ISO 8601 in UTC; long cells end in an ellipsis.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.cli_table import clip, render

MAX_FILES = 20
_CELL = 48  # widest cell of a table column
_WIDE = 80  # file paths and column types

HISTORY_HEADERS = ("version", "timestamp", "operation", "operationParameters", "operationMetrics", "engineInfo")
_SCHEMA_HEADERS = ("column", "type", "nullable")
_FILE_HEADERS = ("path", "partitionValues", "size", "numRecords", "dvCardinality")


def iso_utc(ms: int) -> str:
    """Milliseconds since the epoch as ISO 8601 in UTC, e.g. ``2024-05-01T12:00:00.000Z``."""
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pairs(mapping: Mapping[str, Any] | None, *, skip_zero: bool = False) -> str:
    """``{"a": "1", "b": [2]}`` as ``a=1 b=[2]``; strings stay as they are, other values as JSON."""
    items = (mapping or {}).items()
    return " ".join(f"{k}={_value(v)}" for k, v in items if not (skip_zero and _value(v) in ("0", "0.0")))


def history_lines(history: list[dict[str, Any]]) -> list[str]:
    """One line per commit of :meth:`DeltaTable.history`, under a header line."""
    rows = [
        (
            h["version"],
            iso_utc(h["timestamp"]) if isinstance(h.get("timestamp"), int) else None,
            h.get("operation"),
            clip(pairs(h.get("operationParameters")), _CELL),
            clip(pairs(h.get("operationMetrics"), skip_zero=True), _CELL),
            clip(str(h.get("engineInfo") or ""), _CELL),
        )
        for h in history
    ]
    return render(rows, HISTORY_HEADERS)


def describe_lines(doc: dict[str, Any]) -> list[str]:
    """The ``describe`` document as an overview, the schema and (some of) the files."""
    proto, md = doc["protocol"], doc["metadata"]
    overview: list[tuple[str, object]] = [
        ("version", doc["version"]),
        ("timestamp", iso_utc(doc["timestamp"]) if isinstance(doc["timestamp"], int) else None),
        ("protocol", f"reader {proto['minReaderVersion']}, writer {proto['minWriterVersion']}"),
        *((key, ", ".join(proto[key])) for key in ("readerFeatures", "writerFeatures") if key in proto),
        ("id", md["id"]),
        ("name", md["name"]),
        ("partitionColumns", ", ".join(md["partitionColumns"]) or None),
    ]
    config = sorted(md["configuration"].items())
    overview += [("configuration" if i == 0 else "", f"{k}={v}") for i, (k, v) in enumerate(config)] or [
        ("configuration", None)
    ]
    overview += [("numFiles", doc["numFiles"]), ("sizeInBytes", doc["sizeInBytes"])]
    overview.append(("numRecords", doc.get("numRecords", "unknown (no stats)")))
    fields = md["schema"].get("fields", [])
    schema = [(clip(f["name"], _CELL), clip(type_name(f["type"]), _WIDE), f["nullable"]) for f in fields]
    files = doc["files"]
    shown = [
        (
            clip(f["path"], _WIDE),
            clip(pairs(f["partitionValues"]), _CELL),
            f["size"],
            f["numRecords"],
            f["deletionVector"]["cardinality"] if f["deletionVector"] else None,
        )
        for f in files[:MAX_FILES]
    ]
    more = [f"... {len(files) - MAX_FILES} more"] if len(files) > MAX_FILES else []
    return [
        *render([(f"{key}:" if key else "", value) for key, value in overview]),
        "",
        f"schema ({len(schema)} columns):",
        *render(schema, _SCHEMA_HEADERS),
        "",
        f"files ({len(files)}):",
        *(render(shown, _FILE_HEADERS) if files else []),
        *more,
    ]


def type_name(t: str | Mapping[str, Any]) -> str:
    """A schema type as compact text: ``long``, ``array<string>``, ``struct<a: int, b: map<string, long>>``."""
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "struct":
        return "struct<" + ", ".join(f"{f['name']}: {type_name(f['type'])}" for f in t.get("fields", [])) + ">"
    if kind == "array":
        return f"array<{type_name(t['elementType'])}>"
    if kind == "map":
        return f"map<{type_name(t['keyType'])}, {type_name(t['valueType'])}>"
    return json.dumps(t, separators=(",", ":"))


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
