"""The outermost layer of every HTTP request, a pure ASGI middleware: it refuses request bodies
above a size before anything parses them, and records each request (one log line, one
observation of `tenure_http_request_duration_seconds`).

One layer rather than two because each layer's send wrapper is a coroutine call per ASGI
message, and the send chain was a large share of an acquire's CPU (bench/README.md, step 3)."""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure_server.api.problems import PAYLOAD_TOO_LARGE, problem_response
from tenure_server.app.ports import Observer, RequestMetrics

_log = logging.getLogger("tenure.http")
# Probes and scrapes arrive every few seconds; their lines are debug, not info.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# Answers below this status are routine: logged at debug (their latency is in the histogram),
# because a line per request cost a quarter of an acquire's CPU (bench/README.md).
ROUTINE_BELOW = 300


class _TooLarge(Exception):
    pass


class _Exchange:
    """One request as the edge sees it: the body bytes received so far and the status answered.
    Its bound `receive` and `send` replace the server's for the app."""

    __slots__ = (
        "_max_bytes",
        "_receive",
        "_scope",
        "_send",
        "exceeded",
        "received",
        "refused",
        "status",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send, max_bytes: int) -> None:
        self._scope = scope
        self._receive = receive
        self._send = send
        self._max_bytes = max_bytes
        self.received = 0
        # What the server answers if the app fails before starting a response.
        self.status = 500
        self.exceeded = False
        self.refused = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self._max_bytes:
                self.exceeded = True
                raise _TooLarge
        return message

    async def send(self, message: Message) -> None:
        if self.exceeded:
            # The framework turns a failed body read into its own error response; once the
            # body went over the limit, the answer is ours instead.
            if not self.refused:
                await self.refuse()
            return
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        await self._send(message)

    async def refuse(self) -> None:
        self.refused = True
        self.status = PAYLOAD_TOO_LARGE.status
        response = problem_response(
            PAYLOAD_TOO_LARGE, f"request bodies are limited to {self._max_bytes} bytes"
        )
        await response(self._scope, self._receive, self._send)


class RequestEdge:
    """Refuses bodies over `max_bytes` (declared by Content-Length or counted as they stream)
    with 413 `payload-too-large`, and records every HTTP request: its latency labelled by route
    template (never by raw path) and a log line (method, path, route, status, latency;
    successes and probes at debug)."""

    def __init__(self, app: ASGIApp, metrics: RequestMetrics, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.app = app
        self.metrics = metrics
        self.max_bytes = max_bytes
        # Finding a series by labels() cost more than observing it; as many as the series.
        self._series: dict[tuple[str, str, int], Observer] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        exchange = _Exchange(scope, receive, send, self.max_bytes)
        try:
            declared = dict(scope["headers"]).get(b"content-length")
            if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
                await exchange.refuse()
                return
            try:
                await self.app(scope, exchange.receive, exchange.send)
            except _TooLarge:
                if not exchange.refused:
                    await exchange.refuse()
        finally:
            self._record(scope, exchange.status, time.perf_counter() - started)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route: Any = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        method = str(scope.get("method", ""))
        series = self._series.get((method, template, status))
        if series is None:
            series = self.metrics.requests.labels(method, template, str(status))
            self._series[method, template, status] = series
        series.observe(seconds)
        path = str(scope.get("path", ""))
        level = logging.DEBUG if status < ROUTINE_BELOW or path in QUIET_PATHS else logging.INFO
        if not _log.isEnabledFor(level):
            return
        _log.log(
            level,
            "%s %s %d",
            method,
            path,
            status,
            extra={
                "event": "http.request",
                "method": method,
                "path": path,
                "route": template,
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
            },
        )
