"""The HTML page of a health report, opened in a real headless browser (Chromium from Debian).

The DOM Chromium builds must hold the three charts with one bar per size bin,
one bar per partition and one point per commit; its screenshot must be a real
picture (far more ink than a blank page's). Without Chromium the browser tests
skip, except under CI (``CI=true``), where a missing Chromium fails them.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from airflow_delta_provider.delta.health.decisions import assess
from airflow_delta_provider.delta.health.page import render_page
from airflow_delta_provider.delta.health.report import SIZE_BINS
from airflow_delta_provider.delta.table import DeltaTable
from tests.browser import chromium

WINDOW = (1200, 1600)


def run_chromium(*args: str) -> str:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage"]
    done = subprocess.run([chromium(), *flags, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def screenshot(page: Path, png: Path) -> bytes:
    run_chromium(f"--screenshot={png}", f"--window-size={WINDOW[0]},{WINDOW[1]}", page.as_uri())
    return png.read_bytes()


class _Charts(HTMLParser):
    """Counts ``rect.bar`` and ``circle.point`` per ``<svg id=...>``."""

    def __init__(self) -> None:
        super().__init__()
        self.svg: str | None = None
        self.marks: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id") or ""
            self.marks.setdefault(self.svg, 0)
        elif self.svg is not None and a.get("class") in ("bar", "point"):
            self.marks[self.svg] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg = None


def png_facts(data: bytes) -> tuple[int, int, int, float]:
    """(width, height, distinct byte values, share of non-zero bytes) of a PNG's filtered scanlines."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    return width, height, len(set(raw)), sum(1 for b in raw[::7] if b) / len(raw[::7])


@pytest.fixture
def page(health_table, tmp_path) -> Path:
    root, _written = health_table
    report, decisions = assess(DeltaTable(root))
    path = tmp_path / "health.html"
    path.write_text(render_page(report.to_dict(), [d.to_dict() for d in decisions]), encoding="utf-8")
    return path


def test_the_page_is_self_contained(page):
    text = page.read_text()
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text


def test_chromium_builds_the_three_charts(page):
    charts = _Charts()
    charts.feed(run_chromium("--dump-dom", page.as_uri()))
    # One bar per size bin, one per partition (a, b, null), one point per commit (versions 0..4).
    assert charts.marks == {"file-size-histogram": len(SIZE_BINS), "deleted-rows": 3, "versions": 5}


def test_the_screenshot_is_a_real_picture(page, tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    ours = screenshot(page, tmp_path / "health.png")
    empty = screenshot(blank, tmp_path / "blank.png")
    width, height, distinct, ink = png_facts(ours)
    assert (width, height) == WINDOW
    assert distinct > 64 and ink > 0.01, (distinct, ink)
    assert len(ours) > 10 * len(empty), (len(ours), len(empty))
    if os.environ.get("HEALTH_SCREENSHOT"):  # how docs/_static/health-report.png is made
        shutil.copy(tmp_path / "health.png", os.environ["HEALTH_SCREENSHOT"])
