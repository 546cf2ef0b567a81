"""With traces on, every request has a server span named by its route template, whether the
express lane or FastAPI answers it, with its statements as child spans; log lines written during
a request carry its trace id; and leaving the app undoes everything tracing patched.

The spans are the real SDK's, kept by its InMemorySpanExporter."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id, format_trace_id
from starlette.background import BackgroundTask

from tenure_server.server.app import create_app
from tenure_server.server.logs import JsonFormatter
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing
from tests.support.lifespan import running

# httpx's plain JSON takes the express lane; a charset parameter goes through FastAPI
# (tests/api/test_express.py).
EXPRESS = {"content-type": "application/json"}
FASTAPI = {"content-type": "application/json; charset=utf-8"}
ACQUIRE = '{"holder": "a", "ttl_seconds": 30}'


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced(
    settings: Settings, exporter: InMemorySpanExporter
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with traces on, its spans kept by `exporter`."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(settings, Tracing(provider))
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as api:
            yield api


def server_span(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.kind is SpanKind.SERVER and s.name == name]
    return span


def statements_under(spans: tuple[ReadableSpan, ...], root: ReadableSpan) -> list[ReadableSpan]:
    """The asyncpg spans (client spans) whose chain of parents reaches `root`."""
    by_id = {s.context.span_id: s for s in spans}

    def descends(span: ReadableSpan) -> bool:
        while span.parent is not None:
            if span.parent.span_id == root.context.span_id:
                return True
            parent = by_id.get(span.parent.span_id)
            if parent is None:
                return False
            span = parent
        return False

    return [s for s in spans if s.kind is SpanKind.CLIENT and descends(s)]


async def test_an_express_lane_acquire_has_a_server_span_with_its_statements(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """The lane answers without FastAPI's routing, yet its request is traced as the route."""
    answer = await traced.post("/v1/leases/close-day/acquire", content=ACQUIRE, headers=EXPRESS)
    assert answer.status_code == 200, answer.text
    spans = exporter.get_finished_spans()
    server = server_span(spans, "POST /v1/leases/{name}/acquire")
    assert server.attributes is not None
    assert server.attributes["http.route"] == "/v1/leases/{name}/acquire"
    assert server.attributes["http.status_code"] == 200
    statements = statements_under(spans, server)
    assert statements, [s.name for s in spans]
    assert all(s.context.trace_id == server.context.trace_id for s in statements)
    assert any("acquire" in str((s.attributes or {}).get("db.statement", "")) for s in statements)
    # Named by the statement's first SQL word, not by the comment our SQL starts with.
    assert all(s.name.isupper() and s.name.isalpha() for s in statements), statements


async def test_coalesced_acquires_each_have_their_span(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """Acquires arriving together share batch statements: every request keeps its server span,
    and each batch statement is under the span of a request it answers (docs/tracing.md)."""
    paths = [f"/v1/leases/job-{n}/acquire" for n in range(8)]
    answers = await asyncio.gather(
        *(traced.post(path, content=ACQUIRE, headers=EXPRESS) for path in paths)
    )
    assert [answer.status_code for answer in answers] == [200] * len(paths)
    spans = exporter.get_finished_spans()
    served = [s for s in spans if s.kind is SpanKind.SERVER]
    assert len(served) == len(paths)
    under = {s.context.span_id for server in served for s in statements_under(spans, server)}
    statements = {s.context.span_id for s in spans if s.kind is SpanKind.CLIENT and s.parent}
    assert statements
    assert statements == under


async def test_fastapi_routed_requests_have_a_server_span_with_their_statements(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """A hot route FastAPI answers (another content type) and a route only FastAPI has."""
    answer = await traced.post("/v1/leases/close-day/acquire", content=ACQUIRE, headers=FASTAPI)
    assert answer.status_code == 200, answer.text
    assert (await traced.get("/v1/leases/close-day")).status_code == 200
    spans = exporter.get_finished_spans()
    for name in ("POST /v1/leases/{name}/acquire", "GET /v1/leases/{name}"):
        assert statements_under(spans, server_span(spans, name)), name


async def test_a_refusal_is_traced_with_its_status(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """A lease held elsewhere: the lane's 409 is on its span."""
    await traced.post("/v1/leases/close-day/acquire", content=ACQUIRE, headers=EXPRESS)
    held = '{"holder": "b", "ttl_seconds": 30}'
    answer = await traced.post("/v1/leases/close-day/acquire", content=held, headers=EXPRESS)
    assert answer.status_code == 409
    spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert [(s.attributes or {}).get("http.status_code") for s in spans] == [200, 409]


async def test_probes_and_scrapes_are_not_traced(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """/healthz, /readyz and /metrics come every few seconds: no span of theirs."""
    for path in ("/healthz", "/readyz", "/metrics"):
        assert (await traced.get(path)).status_code == 200, path
    assert not [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]


async def test_an_incoming_trace_context_is_the_parent_of_the_server_span(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """A caller's `traceparent` puts the request in the caller's trace."""
    trace_id, parent_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    headers = {**EXPRESS, "traceparent": f"00-{trace_id}-{parent_id}-01"}
    await traced.post("/v1/leases/close-day/acquire", content=ACQUIRE, headers=headers)
    server = server_span(exporter.get_finished_spans(), "POST /v1/leases/{name}/acquire")
    assert format_trace_id(server.context.trace_id) == trace_id
    assert server.parent is not None
    assert format_span_id(server.parent.span_id) == parent_id


async def test_log_lines_written_during_a_request_carry_its_trace_id(
    traced: httpx.AsyncClient, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    """The lease event and the request line name the request's trace and a span of it; a line
    written outside any span has neither field."""
    caplog.set_level(logging.DEBUG)
    await traced.post("/v1/leases/close-day/acquire", content=ACQUIRE, headers=EXPRESS)
    logging.getLogger("tenure.test").info("outside any request")
    server = server_span(exporter.get_finished_spans(), "POST /v1/leases/{name}/acquire")
    formatter = JsonFormatter()
    lines = {
        record.getMessage() if record.name == "tenure.test" else record.__dict__.get("event"): (
            json.loads(formatter.format(record))
        )
        for record in caplog.records
        if record.name in ("tenure.events", "tenure.http", "tenure.test")
    }
    span_ids = {format_span_id(s.context.span_id) for s in exporter.get_finished_spans()}
    for event in ("lease.acquired", "http.request"):
        assert lines[event]["trace_id"] == format_trace_id(server.context.trace_id)
        assert lines[event]["span_id"] in span_ids
    assert "trace_id" not in lines["outside any request"]
    assert "span_id" not in lines["outside any request"]


async def test_leaving_the_app_undoes_what_tracing_patched(
    settings: Settings, exporter: InMemorySpanExporter
) -> None:
    """asyncpg's methods, the log record factory and Starlette's BackgroundTask are the
    originals again once the app has stopped, and the spans left were exported."""
    originals = (
        asyncpg.Connection.fetchrow,
        logging.getLogRecordFactory(),
        BackgroundTask.__call__,
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(settings, Tracing(provider))
    async with app.router.lifespan_context(app):
        assert asyncpg.Connection.fetchrow is not originals[0]
        assert logging.getLogRecordFactory() is not originals[1]
    assert (
        asyncpg.Connection.fetchrow,
        logging.getLogRecordFactory(),
        BackgroundTask.__call__,
    ) == originals
