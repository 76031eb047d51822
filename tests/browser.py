"""Headless Chromium (Debian's package) driven over the DevTools protocol.

The command line (``--dump-dom``, ``--screenshot``) cannot send a cookie; the
Delta pages need the Airflow UI's session cookie. :class:`Browser` starts
Chromium with a DevTools port on loopback, sets cookies, loads a page until
its load event, and returns its DOM and a PNG screenshot. Without Chromium
the tests skip, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

WINDOW = (1400, 1000)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing under CI: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed")
    return found


class Browser:
    """One headless Chromium with one page; a context manager."""

    def __init__(self) -> None:
        from websockets.sync.client import connect

        self._profile = tempfile.mkdtemp(prefix="chromium-")
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage"]
        self._proc = subprocess.Popen(
            [chromium(), *flags, f"--window-size={WINDOW[0]},{WINDOW[1]}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        self._ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self._id = 0
        self._send("Page.enable")

    def _send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=120))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def set_cookie(self, url: str, name: str, value: str) -> None:
        self._send("Network.setCookie", url=url, name=name, value=value, httpOnly=True)

    def load(self, url: str) -> str:
        """Open ``url``, wait for its load event; the DOM as HTML."""
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": "Page.navigate", "params": {"url": url}}))
        loaded = False
        while not loaded:
            message = json.loads(self._ws.recv(timeout=120))
            loaded = message.get("method") == "Page.loadEventFired"
        return str(self.evaluate("document.documentElement.outerHTML"))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        return self._send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self._send("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        if hasattr(self, "_ws"):
            self._ws.close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
