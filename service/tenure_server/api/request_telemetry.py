"""Request logs and the request-latency histogram: a pure ASGI middleware."""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure_server.telemetry import Metrics

_log = logging.getLogger("tenure.http")
# Probes and scrapes arrive every few seconds; their lines are debug, not info.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# Answers below this status are routine: logged at debug (their latency is in the histogram),
# because a line per request cost a quarter of an acquire's CPU (bench/README.md).
ROUTINE_BELOW = 300


class RequestTelemetry:
    """One log line per HTTP request (method, path, route, status, latency; successes at debug)
    and one observation of `tenure_http_request_duration_seconds`, labelled by route template,
    never by raw path."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the app fails before starting a response

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self._record(scope, status, time.perf_counter() - started)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route: Any = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        method = str(scope.get("method", ""))
        self.metrics.requests.labels(method, template, str(status)).observe(seconds)
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
