"""OpenTelemetry in the client, through OpenTelemetry's API alone, when it is installed.

Each request carries the current trace context (W3C `traceparent` / `tracestate`, by the
propagators OpenTelemetry is configured with), so that the service's spans join the caller's
trace; `run_once` runs inside a `tenure.run` span; renewals are sent under the context their
lease was acquired in, so that they show in the trace of the run that holds it. The spans are
recorded only if the application installed an SDK; without `opentelemetry-api` every function
here is a no-op and nothing is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING

try:
    from opentelemetry import context, propagate, trace
except ImportError:  # the API is optional: `pip install opentelemetry-api` or "tenure[otel]"
    context = propagate = trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from opentelemetry.context import Context

__all__ = ["attached", "current_context", "run_span", "trace_headers"]


def trace_headers() -> dict[str, str] | None:
    """The headers that carry the current trace context; None when there is none."""
    # An empty context (no span, no baggage: tracing is off here) gives the propagators nothing
    # to carry; skipping them saves every request their work.
    if propagate is None or not context.get_current():
        return None
    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers or None


def run_span(job: str, window: str) -> AbstractContextManager[object]:
    """The span of one `run_once` of `job` for `window` (a no-op without an SDK)."""
    if trace is None:
        return nullcontext()
    # Looked up per run, not kept: the provider is the one installed now (once per run is cheap).
    tracer = trace.get_tracer("tenure")
    attributes = {"tenure.job": job, "tenure.window": window}
    return tracer.start_as_current_span("tenure.run", attributes=attributes)


def current_context() -> Context | None:
    """The current context, to send later requests under (see `attached`)."""
    return None if context is None else context.get_current()


@contextmanager
def attached(saved: Context | None) -> Iterator[None]:
    """Inside, `saved` (from `current_context`) is the current context."""
    if saved is None or context is None:
        yield
        return
    token = context.attach(saved)
    try:
        yield
    finally:
        context.detach(token)
