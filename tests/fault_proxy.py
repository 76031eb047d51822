"""A fault-injecting HTTP proxy for the object-store tests, on a loopback port.

It forwards each request to a storage server (moto's S3, Azurite) and, where
a :class:`Rule` matches the request's method and path, injects one fault
instead of (or after) forwarding it:

``503``, ``500``
    answered at once with that status (S3's ``SlowDown``, ``InternalError``),
    the request not forwarded;
``500_after``
    forwarded and applied by the server, then answered ``500``;
``reset_before``, ``reset_after``
    the connection reset (TCP RST) before forwarding, or after the server
    applied the request;
``timeout_after``
    forwarded and applied, and the answer held back past the client's timeout;
``drop_body``
    forwarded, then the answer's headers and half its body sent and the
    connection closed.

A rule fires on a schedule (the n-th matching requests) or with a seeded
probability, at most ``limit`` times. The proxy is built on the standard
library's threaded HTTP server: the rules need HTTP semantics (a status per
method and path), which TCP-level tools such as toxiproxy cannot give, and
mitmproxy would bring dozens of pinned dependencies for what is one handler.
Only the rules below are ours.
"""

from __future__ import annotations

import contextlib
import fnmatch
import http.client
import random
import socket
import struct
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: Every fault the proxy injects.
FAULTS = ("503", "500", "500_after", "reset_before", "reset_after", "timeout_after", "drop_body")
#: Faults after which the server has applied the request: the client cannot know it.
AMBIGUOUS = frozenset({"500_after", "reset_after", "timeout_after", "drop_body"})

#: Path patterns (globs over ``/bucket/key?query``, unquoted) for the files of a table.
COMMITS = "*/_delta_log/[0-9]*[0-9].json"
CHECKPOINTS = "*/_delta_log/*.checkpoint*.parquet"
LAST_CHECKPOINT = "*/_delta_log/_last_checkpoint"
CHECKSUMS = "*/_delta_log/*.crc"
LOG = "*/_delta_log/*"
DATA = "*.parquet"

_BODIES = {
    503: b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
    500: b"<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>",
}


@dataclass(frozen=True)
class Rule:
    """One fault, for requests whose method is in ``methods`` (empty: any) and
    whose target matches a glob of ``paths`` and none of ``exclude``.

    It fires on the matching requests numbered in ``schedule`` (1-based),
    else with ``probability`` drawn from the proxy's seeded generator, at
    most ``limit`` times (None: no limit)."""

    fault: str
    methods: tuple[str, ...] = ()
    paths: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    probability: float = 0.0
    schedule: frozenset[int] = frozenset()
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; one of {', '.join(FAULTS)}")

    def matches(self, method: str, target: str) -> bool:
        return (
            (not self.methods or method in self.methods)
            and any(fnmatch.fnmatchcase(target, p) for p in self.paths)
            and not any(fnmatch.fnmatchcase(target, p) for p in self.exclude)
        )


def random_faults(probability: float, faults: tuple[str, ...] = FAULTS, **match: object) -> list[Rule]:
    """Rules that together fail ``probability`` of the matching requests, each
    fault kind equally often."""
    share = probability / len(faults)
    # Rules are tried in order, each on the requests the previous ones let through.
    rules = []
    for i, fault in enumerate(faults):
        rules.append(Rule(fault, probability=share / (1 - share * i), **match))  # type: ignore[arg-type]
    return rules


#: An outage: every request answered 503 (a store out of reach for a while).
OUTAGE = Rule("503", probability=1.0)


@dataclass(frozen=True)
class Injection:
    fault: str
    method: str
    target: str


class FaultProxy:
    """An HTTP/1.1 forwarder on a loopback port in front of ``upstream_port``.

    :meth:`inject` installs rules for a ``with`` block; :meth:`unreachable`,
    :meth:`ignoring_if_none_match` and :meth:`delay_responses` are the fixed
    modes older tests use. ``requests`` lists every request forwarded,
    ``injected`` every fault injected."""

    def __init__(self, upstream_port: int, seed: int = 0, hold_seconds: float = 1.0) -> None:
        self.upstream_port = upstream_port
        self.down = False
        self.strip_if_none_match = False
        self.delay: tuple[float, str] | None = None
        #: How long ``timeout_after`` holds an answer back (past the client's timeout).
        self.hold_seconds = hold_seconds
        self.rules: list[Rule] = []
        self.requests: list[tuple[str, str]] = []
        self.injected: list[Injection] = []
        self._random = random.Random(seed)
        self._seen: Counter[int] = Counter()
        self._fired: Counter[int] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                if proxy.down:
                    self._reset()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy._draw(self.command, _target(self.path))
                if fault in ("503", "500"):
                    self._answer(int(fault), "Injected", [("Content-Type", "application/xml")], _BODIES[int(fault)])
                    return
                if fault == "reset_before":
                    self._reset()
                    return
                proxy.requests.append((self.command, self.path))
                status, reason, headers, data = proxy._upstream(self.command, self.path, self.headers, body)
                if fault == "reset_after":
                    self._reset()
                elif fault == "timeout_after":
                    time.sleep(proxy.hold_seconds)
                    self._reset()
                elif fault == "500_after":
                    self._answer(500, "Injected", [("Content-Type", "application/xml")], _BODIES[500])
                elif fault == "drop_body":
                    self._answer(status, reason, headers, data, cut=True)
                else:
                    if self.command == "PUT" and proxy.delay is not None and proxy.delay[1] in self.path:
                        time.sleep(proxy.delay[0])
                    self._answer(status, reason, headers, data)

            def _answer(
                self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes, cut: bool = False
            ) -> None:
                self.send_response(status, reason)
                for key, value in headers:
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                length = dict((k.lower(), v) for k, v in headers).get("content-length", "0")
                self.send_header("Content-Length", length if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data[: len(data) // 2] if cut else data)
                if cut:
                    self.wfile.flush()
                    self._reset()

            def _reset(self) -> None:
                """Close the connection with a TCP reset (SO_LINGER 0)."""
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _draw(self, method: str, target: str) -> str | None:
        """The fault for this request, if a rule fires (rules in order, first wins)."""
        with self._lock:
            for i, rule in enumerate(self.rules):
                if not rule.matches(method, target):
                    continue
                self._seen[i] += 1
                if rule.limit is not None and self._fired[i] >= rule.limit:
                    continue
                fires = self._seen[i] in rule.schedule
                if not fires and rule.probability:
                    fires = self._random.random() < rule.probability
                if fires and rule.fault == "drop_body" and method in ("HEAD", "PUT", "DELETE"):
                    fires = False  # no body to drop
                if fires:
                    self._fired[i] += 1
                    self.injected.append(Injection(rule.fault, method, target))
                    return rule.fault
        return None

    def _upstream(
        self, method: str, path: str, headers: object, body: bytes | None
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        sent = {k: v for k, v in headers.items()}  # type: ignore[attr-defined]
        if self.strip_if_none_match:
            sent = {k: v for k, v in sent.items() if k.lower() != "if-none-match"}
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            upstream.request(method, path, body=body, headers=sent)
            response = upstream.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            upstream.close()

    # --- modes ---------------------------------------------------------------

    @contextlib.contextmanager
    def inject(self, *rules: Rule, seed: int | None = None) -> Iterator[list[Injection]]:
        """Install ``rules`` (after any already installed) for a ``with`` block;
        yields the list of faults injected meanwhile. ``seed`` restarts the
        generator and the rules' counters."""
        with self._lock:
            if seed is not None:
                self._random.seed(seed)
            first = len(self.rules)
            self.rules.extend(rules)
            for i in range(first, len(self.rules)):
                self._seen[i] = self._fired[i] = 0
            start = len(self.injected)
        view: list[Injection] = []
        try:
            yield view
        finally:
            with self._lock:
                del self.rules[first:]
                view.extend(self.injected[start:])

    @contextlib.contextmanager
    def unreachable(self) -> Iterator[None]:
        self.down = True
        try:
            yield
        finally:
            self.down = False

    @contextlib.contextmanager
    def ignoring_if_none_match(self) -> Iterator[None]:
        self.strip_if_none_match = True
        try:
            yield
        finally:
            self.strip_if_none_match = False

    @contextlib.contextmanager
    def delay_responses(self, seconds: float, path_contains: str) -> Iterator[None]:
        """Hold back the answer of each PUT whose path contains a string."""
        self.delay = (seconds, path_contains)
        try:
            yield
        finally:
            self.delay = None


def lost_commit_answers(injections: list[Injection]) -> int:
    """How many creates of a commit file had their answer lost after the server applied them."""
    return sum(
        1 for i in injections if i.fault in AMBIGUOUS and i.method == "PUT" and fnmatch.fnmatchcase(i.target, COMMITS)
    )


def _target(path: str) -> str:
    """What rules match: the unquoted path and query."""
    return urllib.parse.unquote(path)


__all__ = [
    "AMBIGUOUS",
    "CHECKPOINTS",
    "CHECKSUMS",
    "COMMITS",
    "DATA",
    "FAULTS",
    "LAST_CHECKPOINT",
    "LOG",
    "OUTAGE",
    "FaultProxy",
    "Injection",
    "Rule",
    "lost_commit_answers",
    "random_faults",
]
