"""GET /metrics: Prometheus text format (docs/monitoring.md describes each metric)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from tenure_server.api.dependencies import CallerDep, HealthDep, HistoryDep, TelemetryDep
from tenure_server.app.readiness import check_ready
from tenure_server.domain.errors import StorageUnavailable
from tenure_server.domain.principals import EVERY_NAMESPACE

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(
    caller: CallerDep,
    history: HistoryDep,
    telemetry: TelemetryDep,
    health: HealthDep,
) -> Response:
    """Counters and pool gauges of this replica (all its workers), its readiness, and state
    gauges read from the database."""
    # Metrics name every lease and job: they are for callers that may read every name.
    caller.require("reader", "read metrics", EVERY_NAMESPACE)

    async def ready() -> bool:
        try:
            await check_ready(health)
        except StorageUnavailable:
            return False
        return True

    exposition = await telemetry.scrape(history.gauged_state, ready)
    return Response(exposition, media_type=CONTENT_TYPE_LATEST)
