"""Wires issue 6 into an app: telemetry (metrics, the event sink), the routes of jobs, history,
overview, /metrics and /ui, and the monitor loop in the lifespan. Request logs and latencies
come from the edge middleware (api/edge.py), which create_app adds with these metrics.

`create_app` calls `install` once and enters `monitoring(...)` in its lifespan, so app.py only
names these two."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from tenure_server.api import history, jobs, metrics, ui
from tenure_server.api.monitoring_dependencies import Monitoring
from tenure_server.db.jobs import JobsRepository
from tenure_server.db.monitoring import MonitoringRepository
from tenure_server.db.operations import Operations
from tenure_server.db.repository import Repository
from tenure_server.db.status import StatusReader
from tenure_server.monitor import Monitor, MonitorConfig
from tenure_server.settings import Settings
from tenure_server.telemetry import Telemetry
from tenure_server.webhooks import RetryPolicy, WebhookTarget


def install(app: FastAPI, settings: Settings) -> Telemetry:
    """Add the monitoring routes; the app's `Telemetry`."""
    telemetry = Telemetry(settings.metrics_cache_seconds)
    app.state.telemetry = telemetry
    for router in (jobs.router, history.router, metrics.router, ui.router):
        app.include_router(router)
    return telemetry


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
    app: FastAPI, settings: Settings, repository: Repository, operations: Operations
) -> AsyncIterator[Monitor | None]:
    """Put the monitoring repositories on the app and run the monitor loop while inside."""
    jobs_repository = JobsRepository(repository)
    history_repository = MonitoringRepository(repository)
    statuses = StatusReader(repository, jobs_repository, history_repository)
    app.state.monitoring = Monitoring(
        jobs_repository, history_repository, statuses, settings.lease_stuck_after_seconds
    )
    if not settings.monitor_enabled:
        yield None
        return
    telemetry: Telemetry = app.state.telemetry
    monitor = Monitor(
        monitor_config(settings),
        operations,
        statuses,
        history_repository,
        telemetry.sink,
        telemetry.metrics,
    )
    app.state.monitor = monitor
    await monitor.start()
    try:
        yield monitor
    finally:
        await monitor.stop()
