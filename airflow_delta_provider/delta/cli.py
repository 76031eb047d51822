"""``python -m airflow_delta_provider.delta``: look at a table without Spark.

``describe`` shows a snapshot; ``history`` shows the commitInfo of recent
commits, newest first; ``health`` shows the table's health report and the
maintenance it calls for (``--threshold NAME=VALUE`` overrides a threshold of
:class:`~airflow_delta_provider.delta.health.decisions.MaintenanceThresholds`,
``--html FILE`` also writes the report's HTML page). ``--format`` picks the output: ``json`` (one line, for
scripts) or ``table`` (column-aligned text for people, see :mod:`.cli_format`).
The default is ``table`` when stdout is a terminal and ``json`` otherwise, so
pipes and scripts get JSON. ``describe --format json`` is one object; its
top-level ``numRecords`` counts live rows (the files' ``numRecords`` stats
minus the rows their deletion vectors hide); each file shows its own
``numRecords`` stats and ``deletionVector`` (``storageType`` and
``cardinality``, or null). ``history --format json`` is a list of commitInfo
objects, each with its ``version``. ``health --format json`` is
``{"report": ..., "decisions": [...]}``. The table is a path or URI, or its name
in a catalog (``uc://c.s.t``, ``glue://db.t``, ``hms://db.t``; configured by
``UNITY_CATALOG_URL``/``UNITY_CATALOG_TOKEN``, the AWS chain, ``HIVE_METASTORE_URI``). Errors exit with code 2 and one line on
stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from airflow_delta_provider.delta.catalog.binding import bind
from airflow_delta_provider.delta.cli_format import describe_lines, history_lines
from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.delta.health.decisions import MaintenanceThresholds, assess
from airflow_delta_provider.delta.health.page import render_page
from airflow_delta_provider.delta.health.text import report_lines
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_info import describe


class _ArgumentError(Exception):
    """A bad command line; reported like any other error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other error
        raise _ArgumentError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m airflow_delta_provider.delta", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    d = sub.add_parser("describe", help="print a snapshot of the table")
    d.add_argument("table")
    _add_format(d)
    when = d.add_mutually_exclusive_group()
    when.add_argument("--version", type=int)
    when.add_argument("--timestamp", help="ISO 8601; the newest version committed at or before it")
    h = sub.add_parser("history", help="print commitInfo of the newest commits, newest first")
    h.add_argument("table")
    h.add_argument("--limit", type=int)
    h.add_argument("--start-version", type=int, help="only commits from this version on")
    h.add_argument("--end-version", type=int, help="only commits up to this version")
    _add_format(h)
    health = sub.add_parser("health", help="print the health report and the maintenance that is due")
    health.add_argument("table")
    health.add_argument(
        "--threshold", action="append", default=[], metavar="NAME=VALUE", help="override a maintenance threshold"
    )
    health.add_argument("--html", metavar="FILE", help="also write the report as an HTML page")
    _add_format(health)
    return parser


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("table", "json"), help="default: table when stdout is a terminal, else json"
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        catalog = bind(args.table)  # a catalog name (uc://, glue://, hms://): its location, read-only credentials
        if catalog is None:
            table = DeltaTable(args.table)
        else:
            table = DeltaTable(catalog.location, catalog.storage_options())
            catalog.close()
        if args.command == "describe":
            if args.version is not None and args.version < 0:
                raise _ArgumentError(f"--version must be >= 0, got {args.version}")
            out: Any = describe(table.snapshot(version=args.version, timestamp=args.timestamp))
        elif args.command == "health":
            out = _health(table, args.threshold, args.html)
        else:
            if args.limit is not None and args.limit < 1:
                raise _ArgumentError(f"--limit must be >= 1, got {args.limit}")
            out = table.history(limit=args.limit, start_version=args.start_version, end_version=args.end_version)
    except _ArgumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DeltaError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if (args.format or ("table" if sys.stdout.isatty() else "json")) == "table":
        if args.command == "health":
            lines = report_lines(out["report"], out["decisions"])
        else:
            lines = describe_lines(out) if args.command == "describe" else history_lines(out)
        sys.stdout.write("".join(line + "\n" for line in lines))
    else:
        json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
        sys.stdout.write("\n")
    return 0


def _health(table: DeltaTable, overrides: list[str], html: str | None) -> dict[str, Any]:
    """The ``health`` document; ``html``, when given, receives the page."""
    pairs = [item.partition("=") for item in overrides]
    bad = [item for item, (_k, eq, _v) in zip(overrides, pairs) if not eq]
    if bad:
        raise _ArgumentError(f"--threshold takes NAME=VALUE, got {bad[0]!r}")
    report, decisions = assess(table, MaintenanceThresholds.of({k.strip(): v for k, _eq, v in pairs}))
    doc, steps = report.to_dict(), [d.to_dict() for d in decisions]
    if html:
        with open(html, "w", encoding="utf-8") as page:
            page.write(render_page(doc, steps))
    return {"report": doc, "decisions": steps}
