"""GET /metrics: Prometheus text format (docs/metrics.md describes each metric)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from tenure_server.api.dependencies import CallerDep, MonitoringDep, TelemetryDep
from tenure_server.app.telemetry import Gauge, state_gauges
from tenure_server.domain.principals import EVERY_NAMESPACE

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(
    caller: CallerDep, monitoring: MonitoringDep, telemetry: TelemetryDep
) -> Response:
    """Counters of this replica (all its workers) and state gauges read from the database."""
    # Metrics name every lease and job: they are for callers that may read every name.
    caller.require("reader", "read metrics", EVERY_NAMESPACE)

    async def read() -> list[Gauge]:
        overview = await monitoring.statuses.overview(
            stuck_after=monitoring.stuck_after_seconds, lease_limit=1000, event_limit=0
        )
        return state_gauges(overview, await monitoring.history.delivery_backlog())

    await telemetry.gauges.refresh(read)
    return Response(telemetry.exposition(), media_type=CONTENT_TYPE_LATEST)
