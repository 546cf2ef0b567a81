"""What the monitoring routes receive: the repositories, the status reader and the telemetry that
`observability.install` and its lifespan put on the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from tenure_server.db.jobs import JobsRepository
from tenure_server.db.monitoring import MonitoringRepository
from tenure_server.db.status import StatusReader
from tenure_server.telemetry import Telemetry


@dataclass(frozen=True, slots=True)
class Monitoring:
    jobs: JobsRepository
    history: MonitoringRepository
    statuses: StatusReader
    stuck_after_seconds: float


async def _monitoring(request: Request) -> Monitoring:
    monitoring: Monitoring = request.app.state.monitoring
    return monitoring


async def _telemetry(request: Request) -> Telemetry:
    telemetry: Telemetry = request.app.state.telemetry
    return telemetry


MonitoringDep = Annotated[Monitoring, Depends(_monitoring)]
TelemetryDep = Annotated[Telemetry, Depends(_telemetry)]
