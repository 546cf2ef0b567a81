"""The app factory. The lifespan owns the database: it migrates, opens the pool, and checks that
an acknowledged generation cannot be lost in a crash."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

from fastapi import FastAPI

from tenure_server.adapters.auth import Authenticator
from tenure_server.adapters.database_clock import DatabaseClockWatch
from tenure_server.adapters.monitor import MONITOR_LEASE, Monitor, MonitorConfig
from tenure_server.adapters.stream import EventHub, FanOut, StreamConfig
from tenure_server.adapters.telemetry import Telemetry
from tenure_server.adapters.webhooks import RetryPolicy, WebhookTarget
from tenure_server.api import (
    docs,
    events,
    health,
    history,
    hot_routes,
    jobs,
    leases,
    metrics,
    openapi,
    problems,
    ui,
    windows,
)
from tenure_server.api.edge import RequestEdge
from tenure_server.api.express import Express
from tenure_server.api.hot_routes import HOT_ROUTES
from tenure_server.app.coalescing import Coalescing
from tenure_server.app.history import History
from tenure_server.app.jobs import Jobs
from tenure_server.app.lock_waits import LockWaits
from tenure_server.app.operations import Operations
from tenure_server.app.reserved import warn_of_reserved_names
from tenure_server.app.services import SERVICES, Services
from tenure_server.app.status import StatusReader
from tenure_server.db.migrate import migrate
from tenure_server.db.notifications import ReleaseNotifications
from tenure_server.db.pool import create_pool, start_embedded
from tenure_server.db.repository import Repository
from tenure_server.domain.events import EventSink
from tenure_server.domain.ratelimit import RateLimiter
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing

_log = logging.getLogger("tenure.server")

API_VERSION = "1.0.0"


class UnsafeDatabase(RuntimeError):
    """The database is configured so that an acknowledged lease could be lost."""


async def database_url(settings: Settings) -> str:
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    return await asyncio.to_thread(start_embedded, settings.data_dir)


async def _check_durability(repository: Repository, settings: Settings) -> None:
    # With synchronous_commit=off a crash can lose a committed acquire that a client was already
    # told about; the next acquire then hands the same generation to a second holder.
    if await repository.synchronous_commit() != "off":
        return
    if not settings.allow_async_commit:
        raise UnsafeDatabase(
            "synchronous_commit is off: a crash could hand one generation to two holders. "
            "Turn it on, or set TENURE_ALLOW_ASYNC_COMMIT=true for a throw-away environment."
        )
    _log.warning(
        "UNSAFE: synchronous_commit is off and TENURE_ALLOW_ASYNC_COMMIT is set; "
        "a database crash can grant one generation twice"
    )


@contextmanager
def _drain_on_signals(*drains: Callable[[], None]) -> Iterator[None]:
    """On SIGTERM/SIGINT, answer waiting acquires at once (503 shutting-down) and end the event
    streams, so that the server's graceful shutdown (which waits for every response to end) is
    not held up by them, then let the server's own handler run. Only in the
    main thread, where signal handlers live; the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def drain_then_chain(signum: int, frame: FrameType | None) -> None:
        for drain in drains:
            loop.call_soon_threadsafe(drain)
        chained = previous[signal.Signals(signum)]
        if callable(chained):
            chained(signum, frame)
        elif chained == signal.SIG_DFL:
            signal.default_int_handler(signum, frame)

    for sig in previous:
        signal.signal(sig, drain_then_chain)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _startup_heap_frozen() -> Iterator[None]:
    """Keep what start-up made (modules, routes, models, the pool) out of the garbage
    collector's full collections while serving. A full collection, which runs once enough
    objects have survived, walked them all, a pause in which no request moved (bench/README.md,
    step 12). They
    stay freed by reference counting, and are handed back to the collector at shutdown. (No
    collection first: it would cost every start-up, tests included, the pause this avoids.)"""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass(frozen=True, slots=True)
class Adapters:
    """The adapters a running app drives, registered in the lifespan state beside the services
    (for the server's own use and for tests; the routes read only `Services`)."""

    events: EventHub
    telemetry: Telemetry
    # None when TENURE_MONITOR_ENABLED is off.
    monitor: Monitor | None


# The key of `Adapters` in the lifespan state (`Services` is under app.services.SERVICES).
ADAPTERS = "adapters"


def create_app(settings: Settings, tracing: Tracing | None = None) -> FastAPI:
    """The service's app. `tracing`: where its traces go; by default where the OTEL_* variables
    say, and none without them (server/tracing.py).

    What the routes use is built here (what requests need before start-up: the telemetry, the
    event hub, the authenticator) and in the lifespan (what needs the database), and registered
    once, typed, in the lifespan state (`Services`, `Adapters`)."""
    telemetry = Telemetry(settings.metrics_cache_seconds)
    # Every event goes to the logs and metrics, and the streamed ones to the event stream.
    hub = EventHub(stream_config(settings), telemetry.metrics.registry)
    sink = FanOut(telemetry.sink, hub)
    authenticator = Authenticator.from_toml(settings.tokens_text())
    rate_limiter = (
        RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst, time.monotonic)
        if settings.rate_limit_per_second > 0
        else None
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        dsn = await database_url(settings)
        if settings.migrate_on_start:
            await migrate(dsn, settings.connect_timeout_seconds, settings.migration_patience)
        pool = await create_pool(
            dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            statement_timeout_ms=settings.statement_timeout_ms,
            lock_timeout_ms=settings.lock_timeout_ms,
        )
        notifications = ReleaseNotifications(dsn, hub)
        try:
            repository = Repository(pool, settings.pool_acquire_timeout_seconds)
            await _check_durability(repository, settings)
            await notifications.start()
            hub.start(notifications)
            operations = Operations(
                repository,
                notifications,
                sink,
                Coalescing(
                    settings.coalesce_max_batch,
                    settings.coalesce_max_statements,
                    # A shared statement holds no more items than one request may.
                    settings.max_batch_size,
                ),
                LockWaits(settings.lock_waits, settings.lock_wait_patience_seconds),
                settings.max_early_tolerance_seconds,
            )
            statuses = StatusReader(repository, repository, repository, settings.overview_limits)
            services = Services(
                operations=operations,
                limits=settings.limits,
                authenticator=authenticator,
                rate_limiter=rate_limiter,
                jobs=Jobs(repository, statuses),
                history=History(repository, statuses, settings.lease_stuck_after_seconds),
                health=repository,
                telemetry=telemetry,
                events=hub,
            )
            clock = DatabaseClockWatch(
                repository,
                telemetry.database_clock,
                jump_seconds=settings.database_clock_jump_seconds,
            )
            async with (
                monitoring(settings, repository, operations, statuses, sink, telemetry) as monitor,
                telemetry.pool.watching(pool),
                clock.watching(settings.database_clock_interval_seconds),
            ):
                with _drain_on_signals(operations.drain, hub.close), _startup_heap_frozen():
                    yield {SERVICES: services, ADAPTERS: Adapters(hub, telemetry, monitor)}
        finally:
            await hub.stop()
            await notifications.stop()
            await pool.close()

    app = FastAPI(
        title="Tenure",
        version=API_VERSION,
        summary="Leases, job windows and fencing tokens on PostgreSQL.",
        lifespan=lifespan,
        # Added by api/docs.py after the API's routes, with assets served locally, not a CDN's.
        docs_url=None,
        redoc_url=None,
        # FastAPI's own OpenTelemetry spans, metrics and logs: never used (traces come from
        # server/tracing.py's instrumentation, with which FastAPI makes none of its own; metrics
        # are Prometheus'), yet FastAPI asked OpenTelemetry for its providers on every request,
        # reading os.environ each time: 4% of a worker's CPU under acquire load.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    # The router tries included routes in order, and FastAPI's per-route matching is costly: the
    # hot routes go first (no other path overlaps theirs), which cut the HTTP layer's work per
    # acquire by a fifth. The committed OpenAPI document (sorted keys) is the same.
    app.include_router(hot_routes.router(HOT_ROUTES))
    app.include_router(leases.router)
    problems.install(app)
    openapi.with_integer_bounds(app)
    for router in (jobs.router, history.router, metrics.router, ui.router, events.router):
        app.include_router(router)
    # Added first, so it runs inside RequestEdge: limits, log and metrics apply to it alike.
    app.add_middleware(Express, routes=HOT_ROUTES)
    app.add_middleware(RequestEdge, metrics=telemetry.metrics, max_bytes=settings.max_body_bytes)
    for router in (windows.router, windows.resolver, health.router):
        app.include_router(router)
    docs.install(app)
    tracing = Tracing.from_environment() if tracing is None else tracing
    if tracing is not None:
        tracing.install(app)
    return app


def stream_config(settings: Settings) -> StreamConfig:
    return StreamConfig(
        publish_seconds=settings.events_publish_seconds,
        buffer_size=settings.events_buffer_size,
        history=settings.events_history,
        subscriber_queue=settings.events_subscriber_queue,
        max_streams=settings.events_max_streams,
        max_streams_per_principal=settings.events_max_streams_per_principal,
        keepalive_seconds=settings.events_keepalive_seconds,
    )


def monitor_config(settings: Settings) -> MonitorConfig:
    webhooks = [
        WebhookTarget("json", url.get_secret_value()) for url in settings.alert_webhook_urls
    ] + [
        WebhookTarget("slack", url.get_secret_value()) for url in settings.alert_slack_webhook_urls
    ]
    return MonitorConfig(
        interval_seconds=settings.monitor_interval_seconds,
        lease_ttl_seconds=settings.monitor_lease_ttl_seconds,
        stuck_after_seconds=settings.lease_stuck_after_seconds,
        retention_seconds=settings.event_retention_seconds,
        retention_batch=settings.retention_batch_size,
        open_alerts_per_pass=settings.monitor_open_alerts_per_pass,
        jobs_per_pass=settings.monitor_jobs_per_pass,
        leases_per_pass=settings.monitor_leases_per_pass,
        webhooks=tuple(webhooks),
        retry=RetryPolicy(
            timeout_seconds=settings.webhook_timeout_seconds,
            max_attempts=settings.webhook_max_attempts,
            base_seconds=settings.webhook_retry_base_seconds,
            max_seconds=settings.webhook_retry_max_seconds,
        ),
    )


@asynccontextmanager
async def monitoring(
    settings: Settings,
    repository: Repository,
    operations: Operations,
    statuses: StatusReader,
    sink: EventSink,
    telemetry: Telemetry,
) -> AsyncIterator[Monitor | None]:
    """Run the monitor loop while inside (None when the monitor is disabled)."""
    # Leases and jobs of the deployment's own that an upgrade put out of reach: said once, here.
    await warn_of_reserved_names(repository, (MONITOR_LEASE,), settings.event_retention_seconds)
    if not settings.monitor_enabled:
        yield None
        return
    monitor = Monitor(
        monitor_config(settings), operations, statuses, repository, sink, telemetry.metrics
    )
    await monitor.start()
    try:
        yield monitor
    finally:
        await monitor.stop()


def openapi_document() -> str:
    """The API contract as committed in openapi/openapi.json (sorted keys, stable text)."""
    schema = create_app(Settings()).openapi()
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
