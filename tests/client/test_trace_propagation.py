"""A job's run is one trace across client and service: `run_once` opens a `tenure.run` span, and
its acquire, claim, renewals, completion and release carry that trace's context to the traced
service (over real HTTP, through the protocol `tenure serve` uses), whose server spans are its
children. Without a current span, requests carry no trace context; without OpenTelemetry's API
the client imports and runs as before.

The spans are the real SDK's (InMemorySpanExporter); the client uses OpenTelemetry's API only,
so the test installs the SDK as the global provider, as an application would, and puts the
previous one back afterwards."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.util._once import Once

from tenure import AsyncTenure, RunContext, Tenure, arun_once, run_once
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing
from tests.support.live_service import LiveService


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """The SDK as this process's global tracer provider for the test, then the previous one
    again (the API allows setting it once: the test resets that, as OpenTelemetry's own tests
    do)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    saved = trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace.set_tracer_provider(provider)
    yield provider
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE = saved
    provider.shutdown()


@pytest.fixture
def traced_service(database_url: str, provider: TracerProvider) -> Iterator[LiveService]:
    """The service, traced into the same provider as the client, on a loopback port."""
    live = LiveService(
        Settings(database_url=database_url, pool_min_size=1, pool_max_size=10),
        Tracing(provider),
    )
    live.start()
    yield live
    live.stop()


def server_spans(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [span for span in spans if span.kind is SpanKind.SERVER]


def routes(spans: list[ReadableSpan]) -> set[str]:
    return {span.name for span in spans}


def test_a_sync_run_is_one_trace_renewals_included(
    traced_service: LiveService, exporter: InMemorySpanExporter
) -> None:
    """The run's span is the parent of every request it made, the renewal loop's included."""

    def work(ctx: RunContext) -> str:
        time.sleep(1.3)  # renewals every ttl/3 = 0.5 s: at least two during the run
        return "done"

    with Tenure(traced_service.url) as client:
        result = run_once(client, "close-day", "2026-09-25", work, ttl=1.5)
    assert result.ran
    spans = exporter.get_finished_spans()
    (run,) = [span for span in spans if span.name == "tenure.run"]
    assert run.attributes is not None
    assert (run.attributes["tenure.job"], run.attributes["tenure.window"]) == (
        "close-day",
        "2026-09-25",
    )
    served = server_spans(spans)
    assert routes(served) >= {
        "POST /v1/leases/{name}/acquire",
        "POST /v1/jobs/{job}/windows/{window}/claim",
        "POST /v1/leases/renew",
        "POST /v1/jobs/{job}/windows/{window}/complete",
        "POST /v1/leases/{name}/release",
    }, routes(served)
    for span in served:
        assert span.context.trace_id == run.context.trace_id, span.name
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id, span.name
    # And each server span has its statements under it, in the same trace.
    statements = [span for span in spans if span.kind is SpanKind.CLIENT]
    parents = {span.context.span_id for span in served}
    assert {span.parent.span_id for span in statements if span.parent} & parents


async def test_an_async_run_is_one_trace(
    traced_service: LiveService, exporter: InMemorySpanExporter
) -> None:
    """`arun_once` alike, with a registered job."""

    async def work(ctx: RunContext) -> None:
        await asyncio.sleep(0)

    async with AsyncTenure(traced_service.url) as client:
        result = await arun_once(client, "nightly", "2026-09-25", work)
    assert result.ran
    spans = exporter.get_finished_spans()
    (run,) = [span for span in spans if span.name == "tenure.run"]
    served = server_spans(spans)
    assert len(served) >= 4
    assert {span.context.trace_id for span in served} == {run.context.trace_id}


def test_requests_outside_any_span_start_their_own_trace(
    traced_service: LiveService, exporter: InMemorySpanExporter
) -> None:
    """No current span: no trace context sent, the service's span is a root."""
    with Tenure(traced_service.url) as client:
        client.acquire("close-day", ttl=30)
        client.acquire("close-day", ttl=30)
    first, second = server_spans(exporter.get_finished_spans())
    assert first.parent is None
    assert second.parent is None
    # Two requests on one kept-alive connection: no context leaks from one to the next.
    assert first.context.trace_id != second.context.trace_id


def test_the_client_works_without_opentelemetry() -> None:
    """With OpenTelemetry's API not importable, `import tenure` succeeds and a run's helpers are
    no-ops (a fresh interpreter in which importing it fails)."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "import tenure\n"
        "from tenure._tracing import attached, current_context, run_span, trace_headers\n"
        "with run_span('job', 'w'), attached(current_context()):\n"
        "    assert trace_headers() is None\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.stdout.strip() == "ok", done.stderr
