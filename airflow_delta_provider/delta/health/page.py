"""The health report as one self-contained HTML page, charts drawn server-side as inline SVG.

No script, no stylesheet or font from elsewhere: the page opens from a file,
an object store or an e-mail attachment, offline. It shows the report and the
decisions as tables and three charts, each an ``<svg>`` with an ``id``:

- ``file-size-histogram``: files per size bin (one ``rect.bar`` per bin of
  :data:`~.report.SIZE_BINS`), the small-file bins in orange;
- ``deleted-rows``: the share of rows deletion vectors hide, one ``rect.bar``
  per partition (the :data:`MAX_PARTITION_BARS` with the most hidden rows);
- ``versions``: commit time by version, one ``circle.point`` per commit of
  the report's history, coloured by operation, with a legend.
"""

from __future__ import annotations

import html
from typing import Any

from airflow_delta_provider.delta.cli_format import iso_utc, pairs
from airflow_delta_provider.delta.health.text import report_lines

MAX_PARTITION_BARS = 40
_W, _H, _PAD = 1000, 260, 50
_LEGEND = 180  # the versions chart's legend, right of its points
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
_STYLE = """
body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
pre{background:#f4f6f8;padding:12px;font-size:12px;overflow-x:auto}
svg{background:#fafbfc;border:1px solid #dde}
.due{color:#b00;font-weight:bold}.skip{color:#555}
table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:4px 8px;font-size:13px;text-align:left}
text{font-size:11px;fill:#333}
"""


def render_page(report: dict[str, Any], decisions: list[dict[str, Any]] | None = None) -> str:
    """The page of ``report`` (``HealthReport.to_dict()``) and ``decisions`` (``Decision.to_dict()`` each)."""
    title = f"Delta table health: {report['table']} at version {report['version']}"
    rows = "".join(
        f'<tr><td>{_e(d["step"])}</td><td class="{"due" if d["due"] else "skip"}">'
        f"{'due' if d['due'] else 'not due'}</td><td>{_e(d['reason'])}</td>"
        f"<td>{_e(pairs({k: v for k, v in d['arguments'].items() if v is not None}))}</td></tr>"
        for d in decisions or []
    )
    decided = (
        f'<h2>Decisions</h2><table id="decisions"><tr><th>step</th><th>due</th><th>why</th><th>arguments</th></tr>{rows}</table>'
        if decisions is not None
        else ""
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1><p>Generated {_e(iso_utc(report['generatedAt']))} from the log alone.</p>"
        f"{decided}"
        f"<h2>File sizes</h2>{size_histogram(report)}"
        f"<h2>Rows hidden by deletion vectors, per partition</h2>{deleted_rows(report)}"
        f"<h2>Versions over time</h2>{versions(report)}"
        f"<h2>Report</h2><pre>{_e(chr(10).join(report_lines(report)))}</pre>"
        "</body></html>"
    )


def size_histogram(report: dict[str, Any]) -> str:
    bounds = report["fileSizeHistogram"]["boundaries"]
    counts = report["fileSizeHistogram"]["fileCounts"]
    labels = [_size_label(b) for b in bounds]
    colours = ["#ff7f0e" if b < report["smallFileSize"] else "#1f77b4" for b in bounds]
    return _bars("file-size-histogram", labels, counts, colours, lambda v: str(int(v)), "files")


def deleted_rows(report: dict[str, Any]) -> str:
    parts = sorted(report["partitions"], key=lambda p: -p["deletedRowShare"])[:MAX_PARTITION_BARS]
    labels = [pairs(p["partitionValues"]) or "table" for p in parts]
    shares = [p["deletedRowShare"] for p in parts]
    return _bars("deleted-rows", labels, shares, ["#d62728"] * len(parts), lambda v: f"{v:.0%}", "share", top=1.0)


def versions(report: dict[str, Any]) -> str:
    points = sorted((h for h in report["history"] if h.get("timestamp") is not None), key=lambda h: h["version"])
    body = [_axes("commit time", right=_W - _PAD - _LEGEND)]
    if points:
        v0, v1 = points[0]["version"], points[-1]["version"]
        t0, t1 = min(p["timestamp"] for p in points), max(p["timestamp"] for p in points)
        ops = list(dict.fromkeys(str(p.get("operation")) for p in points))
        colour = {op: _PALETTE[i % len(_PALETTE)] for i, op in enumerate(ops)}
        for p in points:
            x = _PAD + (p["version"] - v0) / max(1, v1 - v0) * (_W - 2 * _PAD - _LEGEND)
            y = _H - _PAD - (p["timestamp"] - t0) / max(1, t1 - t0) * (_H - 2 * _PAD)
            op = str(p.get("operation"))
            body.append(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour[op]}">'
                f"<title>version {p['version']}: {_e(op)} at {_e(iso_utc(p['timestamp']))}</title></circle>"
            )
        body.append(f'<text x="{_PAD}" y="{_H - _PAD + 16}">version {v0}</text>')
        body.append(f'<text x="{_W - _PAD - _LEGEND}" y="{_H - _PAD + 16}" text-anchor="end">version {v1}</text>')
        body.append(f'<text x="4" y="{_PAD - 6}">{_e(iso_utc(t1))}</text>')
        body.append(f'<text x="4" y="{_H - _PAD + 30}">{_e(iso_utc(t0))}</text>')
        for i, op in enumerate(ops):
            y = 14 + 14 * i
            body.append(f'<rect class="legend" x="{_W - 190}" y="{y - 9}" width="10" height="10" fill="{colour[op]}"/>')
            body.append(f'<text x="{_W - 175}" y="{y}">{_e(op)}</text>')
    return _svg("versions", body)


def _bars(
    svg_id: str,
    labels: list[str],
    values: list[float],
    colours: list[str],
    fmt: Any,
    unit: str,
    top: float | None = None,
) -> str:
    body = [_axes(unit)]
    peak = top or max(values, default=0) or 1
    n = max(1, len(values))
    slot = (_W - 2 * _PAD) / n
    for i, (label, value, colour) in enumerate(zip(labels, values, colours)):
        height = value / peak * (_H - 2 * _PAD)
        x = _PAD + i * slot + slot * 0.1
        y = _H - _PAD - height
        body.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" height="{height:.1f}" fill="{colour}">'
            f"<title>{_e(label)}: {_e(fmt(value))}</title></rect>"
        )
        body.append(f'<text x="{x + slot * 0.4:.1f}" y="{y - 3:.1f}" text-anchor="middle">{_e(fmt(value))}</text>')
        short = label if len(label) <= 14 else label[:13] + "…"
        body.append(f'<text x="{x + slot * 0.4:.1f}" y="{_H - _PAD + 14}" text-anchor="middle">{_e(short)}</text>')
    return _svg(svg_id, body)


def _axes(unit: str, right: float = _W - _PAD) -> str:
    return (
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{right}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<text x="4" y="{_PAD - 20}">{_e(unit)}</text>'
    )


def _svg(svg_id: str, body: list[str]) -> str:
    return (
        f'<svg id="{svg_id}" xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img">{"".join(body)}</svg>'
    )


def _size_label(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"≥{n // size} {unit}"
    return f"≥{n} B"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
