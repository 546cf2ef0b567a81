"""Optional OpenTelemetry traces (`pip install "tenure[otel]"`, docs/tracing.md).

Off unless the standard variables ask for them: `OTEL_TRACES_EXPORTER` other than `none`, or an
OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and not
`OTEL_SDK_DISABLED=true`. Off, this module adds nothing to the app and imports neither the SDK
nor an instrumentation (FastAPI itself imports OpenTelemetry's API, a no-op without an SDK). On,
the app gets OpenTelemetry's FastAPI instrumentation, whose ASGI middleware wraps the whole
middleware stack — outside `RequestEdge` and the express lane, so the lane's answers have their
server span too, named by the route template — and, while the app runs, the asyncpg
instrumentation, the trace ids in the log lines, and a batch span processor per exporter.

The SDK reads its own variables: `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` (the service
name defaults to `tenure` here), `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_*`.
Exporters are found by name in the SDK's `opentelemetry_traces_exporter` entry points, as the
SDK's own start-up does; `otlp` is OTLP over HTTP/protobuf (what the extra installs) unless
`OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL` asks for gRPC.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from tenure_server.api.edge import QUIET_PATHS
from tenure_server.server import logs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.sampling import Sampler
    from opentelemetry.trace import Link, TraceState
    from opentelemetry.util.types import Attributes

EXTRA = 'pip install "tenure[otel]"'
DEFAULT_SERVICE_NAME = "tenure"
_EXPORTERS_GROUP = "opentelemetry_traces_exporter"
# Probes and scrapes, every few seconds, are not traced unless these variables say what is not.
NOT_TRACED = ",".join(sorted(QUIET_PATHS))
_EXCLUDED_URLS_VARIABLES = ("OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "OTEL_PYTHON_EXCLUDED_URLS")
# The exporter entry point `otlp` stands for, by OTLP protocol.
_OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}


class TracingUnavailable(RuntimeError):
    """Traces are asked for, but cannot be sent as asked (the extra or an exporter is missing)."""


def requested(environ: Mapping[str, str]) -> bool:
    """Whether the standard variables in `environ` ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return exporters != "none"
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The entry point names of the exporters `OTEL_TRACES_EXPORTER` lists (default `otlp`)."""
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    names = []
    for name in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(","):
        name = name.strip().lower()
        if name == "otlp":
            if protocol not in _OTLP_BY_PROTOCOL:
                raise TracingUnavailable(f"OTEL_EXPORTER_OTLP_PROTOCOL: unknown {protocol!r}")
            name = _OTLP_BY_PROTOCOL[protocol]
        if name and name != "none":
            names.append(name)
    return names


def _exporter_classes(names: Sequence[str]) -> list[type[SpanExporter]]:
    found = {point.name: point for point in entry_points(group=_EXPORTERS_GROUP)}
    missing = [name for name in names if name not in found]
    if missing:
        raise TracingUnavailable(
            f"OTEL_TRACES_EXPORTER names {', '.join(missing)}, which no installed package "
            f"provides (installed: {', '.join(sorted(found))}); {EXTRA} provides otlp "
            "(over HTTP) and console"
        )
    classes: list[type[SpanExporter]] = [found[name].load() for name in names]
    return classes


class Tracing:
    """Traces of one app: its `TracerProvider` (nothing global is set: the instrumentations are
    given it), the exporters each given a batch span processor while the app runs, and the
    URLs not traced (None: as the instrumentation's variables say)."""

    def __init__(
        self,
        provider: TracerProvider,
        exporters: Sequence[Callable[[], SpanExporter]] = (),
        excluded_urls: str | None = NOT_TRACED,
    ) -> None:
        self.provider = provider
        self._exporters = exporters
        self._excluded_urls = excluded_urls

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Tracing | None:
        """The traces the standard variables ask for; None when they ask for none. Raises
        `TracingUnavailable`, naming the extra, when they cannot be sent."""
        environ = os.environ if environ is None else environ
        if not requested(environ):
            return None
        try:
            # What `install` and `running` import: a partial install fails here, by name.
            import opentelemetry.instrumentation.asyncpg
            import opentelemetry.instrumentation.fastapi  # noqa: F401 - the one ruff sees unused
            from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError as error:
            raise TracingUnavailable(
                f"the OTEL_* variables ask for traces, but {error.name} cannot be imported: {EXTRA}"
            ) from None
        exporters = _exporter_classes(_exporter_names(environ))
        # The variables' service.name wins over ours; Resource.create would name it
        # unknown_service otherwise.
        named = SERVICE_NAME in OTELResourceDetector().detect().attributes
        resource = Resource.create({} if named else {SERVICE_NAME: DEFAULT_SERVICE_NAME})
        provider = TracerProvider(resource=resource)  # and the sampler OTEL_TRACES_SAMPLER names
        provider.sampler = statements_in_requests(provider.sampler)
        excluded = None if any(name in environ for name in _EXCLUDED_URLS_VARIABLES) else NOT_TRACED
        return cls(provider, exporters, excluded)

    def install(self, app: FastAPI) -> None:
        """Instrument `app` (before its first request builds the middleware stack) and run the
        rest while its lifespan runs."""
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

        # The send/receive spans would double the spans per request and say nothing an
        # acquire's few bytes make worth knowing.
        FastAPIInstrumentor.instrument_app(
            app,
            tracer_provider=self.provider,
            excluded_urls=self._excluded_urls,
            exclude_spans=["receive", "send"],
        )
        inner = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
            with self.running(app):
                async with inner(app) as state:
                    yield state

        app.router.lifespan_context = lifespan

    @contextmanager
    def running(self, app: FastAPI) -> Iterator[None]:
        """While inside: spans exported, asyncpg's statements traced, trace ids in the logs.
        On leaving, everything is undone and the spans left are flushed."""
        from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.provider.add_span_processor(_statement_names())
        for exporter in self._exporters:
            self.provider.add_span_processor(BatchSpanProcessor(exporter()))
        # Patches asyncpg's Connection class: one traced app per process at a time.
        asyncpg_instrumentor = AsyncPGInstrumentor()
        asyncpg_instrumentor.instrument(tracer_provider=self.provider)
        restore_logs = logs.include_trace_ids(_trace_ids())
        try:
            yield
        finally:
            restore_logs()
            asyncpg_instrumentor.uninstrument()
            # Also restores what the instrumentation patched beyond the app (BackgroundTask).
            FastAPIInstrumentor.uninstrument_app(app)
            self.provider.shutdown()


def statements_in_requests(sampler: Sampler) -> Sampler:
    """`sampler`, but for the statements run outside any span: those of the monitor, the
    release listener and the probes, every few seconds, each would be a trace of its own."""
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
    from opentelemetry.trace import SpanKind, get_current_span

    class StatementsInRequests(Sampler):
        def should_sample(
            self,
            parent_context: Context | None,
            trace_id: int,
            name: str,
            kind: SpanKind | None = None,
            attributes: Attributes = None,
            links: Sequence[Link] | None = None,
            trace_state: TraceState | None = None,
        ) -> SamplingResult:
            parent = get_current_span(parent_context).get_span_context()
            if kind is SpanKind.CLIENT and not parent.is_valid:
                return SamplingResult(Decision.DROP)
            return sampler.should_sample(
                parent_context, trace_id, name, kind, attributes, links, trace_state
            )

        def get_description(self) -> str:
            return f"StatementsInRequests{{{sampler.get_description()}}}"

    return StatementsInRequests()


def _statement_names() -> SpanProcessor:
    """A processor naming each statement's span by its first SQL word. The asyncpg
    instrumentation names it by the first word of the text, and ours starts with a comment
    saying why the statement is safe (db/sql/*.sql): every span would be named `--`."""
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.trace import SpanKind

    class StatementNames(SpanProcessor):
        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            if span.kind is SpanKind.CLIENT and span.name == "--":
                attributes = span.attributes or {}
                # Named as by the old or the stable conventions (OTEL_SEMCONV_STABILITY_OPT_IN).
                text = attributes.get("db.statement", attributes.get("db.query.text", ""))
                statement = str(text)
                code = (line for line in statement.splitlines() if not line.startswith("--"))
                words = " ".join(code).split()
                span.update_name(words[0] if words else "statement")

    return StatementNames()


def _trace_ids() -> Callable[[], tuple[str, str] | None]:
    """A function giving the current span's trace and span ids (W3C hex), if a span is current."""
    from opentelemetry.trace import format_span_id, format_trace_id, get_current_span

    def current() -> tuple[str, str] | None:
        context = get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return format_trace_id(context.trace_id), format_span_id(context.span_id)

    return current
