"""`tenure serve` with the standard OTEL_* variables sends its spans over OTLP/HTTP, as an
operator configures it (here to a receiver in the test, written with the standard library and
OpenTelemetry's protobuf messages); the console exporter prints them; and with no OTEL_*
variable the service serves with no trace anywhere (no trace id in its log lines)."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.processes import free_port, running, tenure_command, without_tenure_settings

pytestmark = pytest.mark.slow

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
ACQUIRE = {"holder": "a", "ttl_seconds": 30}
ARRIVAL_TIMEOUT = 20.0


class Receiver:
    """An OTLP/HTTP trace receiver: keeps each exported span with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, str], Span]] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    resource = {
                        item.key: item.value.string_value
                        for item in resource_spans.resource.attributes
                    }
                    for scope_spans in resource_spans.scope_spans:
                        received.extend((resource, span) for span in scope_spans.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, name: str) -> tuple[dict[str, str], Span]:
        deadline = time.monotonic() + ARRIVAL_TIMEOUT
        while time.monotonic() < deadline:
            for resource, span in list(self.spans):
                if span.name == name:
                    return resource, span
            time.sleep(0.05)
        raise AssertionError(f"no span {name!r}; got {[s.name for _, s in self.spans]}")


def otel_free_environment(database_url: str, **variables: str) -> dict[str, str]:
    """This process's environment without TENURE_* or OTEL_* settings, plus `variables`."""
    env = {k: v for k, v in without_tenure_settings().items() if not k.startswith("OTEL_")}
    env |= {"TENURE_DATABASE_URL": database_url, "TENURE_LOG_LEVEL": "debug"}
    return env | variables


@pytest.fixture
def log() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / "serve.log"


def json_lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if "ts" in entry:  # a log line, not a span the console exporter printed
                lines.append(entry)
    return lines


def serve_and_acquire(env: dict[str, str], log: Path, *arguments: str) -> None:
    """`tenure serve *arguments` with `env`, one acquire carrying TRACEPARENT, then a graceful
    stop (which flushes the spans left)."""
    port = free_port()
    command = tenure_command(port, *arguments)
    with log.open("wb") as output, running(command, port, env=env, output=output):
        answer = httpx.post(
            f"http://127.0.0.1:{port}/v1/leases/close-day/acquire",
            json=ACQUIRE,
            headers=TRACEPARENT,
        )
        assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_exports_spans_over_otlp_http(database_url: str, log: Path, workers: str) -> None:
    """An OTLP endpoint alone turns traces on, in each worker: the acquire's server span
    continues the caller's trace, its statements are its children, the service is named
    `tenure`, and the log lines of the request carry the trace id."""
    with Receiver() as receiver:
        env = otel_free_environment(
            database_url,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_BSP_SCHEDULE_DELAY="50",
        )
        serve_and_acquire(env, log, "--workers", workers)
        resource, server = receiver.wait_for("POST /v1/leases/{name}/acquire")
        assert resource["service.name"] == "tenure"
        assert server.kind == Span.SPAN_KIND_SERVER
        assert server.trace_id.hex() == TRACE_ID
        assert server.parent_span_id.hex() == PARENT_ID
        children = [s for _, s in receiver.spans if s.parent_span_id == server.span_id]
        assert children, [s.name for _, s in receiver.spans]
        assert all(s.kind == Span.SPAN_KIND_CLIENT for s in children)
    lines = json_lines(log)
    (acquired,) = [entry for entry in lines if entry.get("event") == "lease.acquired"]
    (request,) = [entry for entry in lines if entry.get("route") == "/v1/leases/{name}/acquire"]
    assert acquired["trace_id"] == request["trace_id"] == TRACE_ID
    assert request["span_id"] == server.span_id.hex()
    # The readiness probes are not traced (OTEL_PYTHON_FASTAPI_EXCLUDED_URLS would say otherwise).
    probes = [entry for entry in lines if entry.get("path") == "/readyz"]
    assert probes, lines
    assert not any("trace_id" in entry for entry in probes)
    assert not [s for _, s in receiver.spans if "readyz" in s.name]
    # Nor are the statements run outside any request (probes, monitor, listener).
    assert all(s.parent_span_id for _, s in receiver.spans if s.kind == Span.SPAN_KIND_CLIENT)


def test_serve_prints_spans_with_the_console_exporter(database_url: str, log: Path) -> None:
    """OTEL_TRACES_EXPORTER=console, with the service named by OTEL_SERVICE_NAME."""
    env = otel_free_environment(
        database_url, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="tenure-blue"
    )
    serve_and_acquire(env, log)
    text = log.read_text()
    assert '"name": "POST /v1/leases/{name}/acquire"' in text, text
    assert f'"trace_id": "0x{TRACE_ID}"' in text
    assert '"service.name": "tenure-blue"' in text


def test_serve_without_otel_variables_traces_nothing(database_url: str, log: Path) -> None:
    """No OTEL_* variable: the service serves, and no log line carries a trace id, even for a
    request that sent one."""
    serve_and_acquire(otel_free_environment(database_url), log)
    lines = json_lines(log)
    assert any(entry.get("event") == "http.request" for entry in lines), log.read_text()
    assert not any("trace_id" in entry or "span_id" in entry for entry in lines)
