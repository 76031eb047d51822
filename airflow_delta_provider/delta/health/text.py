"""The health report and the decisions as one readable table (CLI and task log).

Two columns, ``measure`` and ``value``, then one row per step (``due``/``skip``,
the reason and the arguments). The report rows read from the same document
``to_dict()`` gives, so the text and the JSON never disagree.
"""

from __future__ import annotations

from typing import Any

from airflow_delta_provider.delta.cli_format import iso_utc, pairs
from airflow_delta_provider.delta.cli_table import clip, render

_CELL = 60
#: How many partitions the text lists (the JSON has them all).
MAX_PARTITIONS = 10


def report_lines(report: dict[str, Any], decisions: list[dict[str, Any]] | None = None) -> list[str]:
    """``report`` (:meth:`HealthReport.to_dict`) and ``decisions`` (``Decision.to_dict()`` each) as lines."""
    rows: list[tuple[object, ...]] = [
        ("table", report["table"]),
        ("version", f"{report['version']} ({iso_utc(report['timestamp'])})"),
        ("files", f"{report['numFiles']} files, {human_bytes(report['sizeInBytes'])}"),
        (
            "small files",
            f"{report['numSmallFiles']} ({report['smallFileShare']:.1%}) under {human_bytes(report['smallFileSize'])}"
            f" (target {human_bytes(report['targetFileSize'])})",
        ),
        (
            "deleted rows",
            f"{report['numDeletedRecords']} of {report['numRecords']} ({report['deletedRowShare']:.1%}) hidden by deletion vectors",
        ),
        (
            "last checkpoint",
            (
                f"version {report['checkpointVersion']}, {report['commitsSinceCheckpoint']} commits since"
                if report["checkpointVersion"] is not None
                else f"none, {report['commitsSinceCheckpoint']} commits"
            )
            + f" (interval {report['checkpointInterval']})",
        ),
        ("last OPTIMIZE", _when(report["lastOptimize"])),
        ("last VACUUM", _when(report["lastVacuum"])),
        (
            "VACUUM would free",
            f"{human_bytes(report['vacuumableBytes'])} ({report['numTombstones']} tombstones,"
            f" {human_bytes(report['tombstonedBytes'])}); LITE {'possible' if report['vacuumLiteAvailable'] else 'not possible'}",
        ),
        (
            "clustering",
            "not clustered"
            if report["clusteringCoverage"] is None
            else f"{report['clusteringCoverage']:.1%} of files by {', '.join(report['clusteringColumns'])}",
        ),
    ]
    parts = report["partitions"]
    if report["partitionColumns"]:
        for p in parts[:MAX_PARTITIONS]:
            rows.append(
                (
                    clip("  " + pairs(p["partitionValues"]), _CELL),
                    f"{p['numFiles']} files ({p['numSmallFiles']} small), {human_bytes(p['sizeInBytes'])},"
                    f" {p['deletedRowShare']:.1%} rows deleted",
                )
            )
        if len(parts) > MAX_PARTITIONS:
            rows.append(("", f"... {len(parts) - MAX_PARTITIONS} more partitions"))
    for d in decisions or []:
        args = pairs({k: v for k, v in d["arguments"].items() if v is not None})
        rows.append((d["step"], f"{'DUE ' if d['due'] else 'skip'}  {d['reason']}" + (f"  [{args}]" if args else "")))
    return render(rows, ("health", "value"))


def _when(info: dict[str, Any] | None) -> str:
    if info is None:
        return "none in the recent history"
    age = info.get("ageSeconds")
    ago = f", {age / 3600:.1f} h ago" if age is not None else ""
    return f"version {info['version']} ({iso_utc(info['timestamp'])}{ago})"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
