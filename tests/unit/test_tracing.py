"""Traces are off unless the standard OTEL_* variables ask for them, and off they add nothing:
the app's middleware stack, lifespan and asyncpg are as without the tracing module."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import asyncpg
import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing, TracingUnavailable, requested

OTEL_ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.fixture
def no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": " None "}, False),
        (OTEL_ENDPOINT, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({**OTEL_ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, False),
        ({**OTEL_ENDPOINT, "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "false"}, True),
        ({"OTEL_SERVICE_NAME": "tenure"}, False),
    ],
)
def test_traces_are_on_only_when_the_standard_variables_ask(
    environ: dict[str, str], on: bool
) -> None:
    """An exporter other than none, or an OTLP endpoint; never with the SDK disabled."""
    assert requested(environ) is on
    assert (Tracing.from_environment(environ) is not None) is on


def test_the_service_name_defaults_to_tenure_unless_the_variables_name_it(
    monkeypatch: pytest.MonkeyPatch, no_otel_variables: None
) -> None:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default."""

    def service_name(**variables: str) -> Any:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        tracing = Tracing.from_environment({"OTEL_TRACES_EXPORTER": "console"})
        assert tracing is not None
        return tracing.provider.resource.attributes["service.name"]

    assert service_name() == "tenure"
    assert service_name(OTEL_RESOURCE_ATTRIBUTES="service.name=ledger,team=ops") == "ledger"
    assert service_name(OTEL_SERVICE_NAME="payments") == "payments"


@pytest.mark.parametrize(
    ("variables", "root_requests"), [({}, True), ({"OTEL_TRACES_SAMPLER": "always_off"}, False)]
)
def test_statements_outside_any_request_are_not_traced(
    monkeypatch: pytest.MonkeyPatch,
    no_otel_variables: None,
    variables: dict[str, str],
    root_requests: bool,
) -> None:
    """A statement span without a parent is dropped; the rest is as OTEL_TRACES_SAMPLER says."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    tracing = Tracing.from_environment({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing is not None
    tracer = tracing.provider.get_tracer("test")
    with (
        tracer.start_as_current_span("GET /", kind=SpanKind.SERVER) as request,
        tracer.start_as_current_span("SELECT", kind=SpanKind.CLIENT) as inside,
    ):
        pass
    with tracer.start_as_current_span("SELECT", kind=SpanKind.CLIENT) as outside:
        pass
    assert request.get_span_context().trace_flags.sampled is root_requests
    assert inside.get_span_context().trace_flags.sampled is root_requests
    assert not outside.get_span_context().trace_flags.sampled
    tracing.provider.shutdown()


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "zipkin"),
        ({"OTEL_TRACES_EXPORTER": "console,jaeger"}, "jaeger"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"},
            "carrier-pigeon",
        ),
    ],
)
def test_an_exporter_no_package_provides_is_refused_by_name(
    environ: dict[str, str], named: str
) -> None:
    """Start-up fails saying which exporter is missing (gRPC is not in the extra)."""
    with pytest.raises(TracingUnavailable, match=named):
        Tracing.from_environment(environ)


def middleware_chain(app: FastAPI) -> list[type[Any]]:
    """The types of the ASGI layers a request passes through, outermost first, to the router."""
    chain: list[type[Any]] = []
    layer: Any = app.build_middleware_stack()
    while layer is not None and layer is not app.router:
        chain.append(type(layer))
        layer = getattr(layer, "app", None)
    return chain


def test_without_the_variables_nothing_is_added(no_otel_variables: None) -> None:
    """The same middleware stack and lifespan as an app built without consulting the tracing
    module, asyncpg unpatched, and log records made by the plain factory."""
    app = create_app(Settings())
    assert "build_middleware_stack" not in vars(app)
    assert not hasattr(app, "_is_instrumented_by_opentelemetry")
    assert not app.router.lifespan_context.__qualname__.startswith("Tracing.")
    assert not hasattr(asyncpg.Connection.fetchrow, "__wrapped__")
    assert logging.getLogRecordFactory() is logging.LogRecord
    traced = create_app(Settings(), Tracing(TracerProvider()))
    assert traced.router.lifespan_context.__qualname__.startswith("Tracing.")
    chain = middleware_chain(traced)
    # The instrumentation wraps the whole stack from outside (with its own error layers),
    # leaving each layer of it in place: the express lane's requests are inside its span.
    assert [layer.__name__ for layer in chain[:4]] == [
        "ServerErrorMiddleware",
        "OpenTelemetryMiddleware",
        "ServerErrorMiddleware",
        "ExceptionHandlerMiddleware",
    ]
    untraced = middleware_chain(app)
    assert chain[2:3] + chain[4:] == untraced
    names = [layer.__name__ for layer in untraced]
    assert names[names.index("RequestEdge") + 1] == "Express"


def test_without_the_variables_no_opentelemetry_sdk_is_imported() -> None:
    """Building the app, tracing off, loads neither the SDK nor an instrumentation (a fresh
    interpreter). FastAPI itself imports OpenTelemetry's API, a no-op without an SDK."""
    code = (
        "import sys\n"
        "from tenure_server.server.app import create_app\n"
        "from tenure_server.server.settings import Settings\n"
        "create_app(Settings())\n"
        "loaded = ('opentelemetry.sdk', 'opentelemetry.instrumentation')\n"
        "print(sorted(m for m in sys.modules if m.startswith(loaded)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_traces_asked_for_without_the_extra_stop_start_up_naming_it() -> None:
    """`tenure serve` with OTEL_TRACES_EXPORTER set where the SDK cannot be imported (a
    fresh interpreter in which importing it fails, as without the extra)."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None\n"
        "sys.argv = ['tenure', 'serve']\n"
        "from tenure._cli import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TENURE_"))}
    env["OTEL_TRACES_EXPORTER"] = "console"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert 'pip install "tenure[otel]"' in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
