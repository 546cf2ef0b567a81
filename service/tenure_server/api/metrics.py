"""GET /metrics: Prometheus text format (docs/monitoring.md describes each metric)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from tenure_server.api.dependencies import CallerDep, MonitoringDep, RepositoryDep, TelemetryDep
from tenure_server.api.health import check_ready
from tenure_server.app.state_gauges import Gauge, state_gauges
from tenure_server.domain.errors import StorageUnavailable
from tenure_server.domain.principals import EVERY_NAMESPACE

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(
    caller: CallerDep,
    monitoring: MonitoringDep,
    telemetry: TelemetryDep,
    repository: RepositoryDep,
) -> Response:
    """Counters and pool gauges of this replica (all its workers), its readiness, and state
    gauges read from the database."""
    # Metrics name every lease and job: they are for callers that may read every name.
    caller.require("reader", "read metrics", EVERY_NAMESPACE)

    async def read() -> list[Gauge]:
        overview = await monitoring.statuses.overview(
            stuck_after=monitoring.stuck_after_seconds, lease_limit=1000, event_limit=0
        )
        return state_gauges(overview, await monitoring.history.delivery_backlog())

    async def ready() -> bool:
        try:
            await check_ready(repository)
        except StorageUnavailable:
            return False
        return True

    await telemetry.gauges.refresh(read, ready)
    return Response(telemetry.exposition(), media_type=CONTENT_TYPE_LATEST)
