"""What handlers receive: the caller, and the operations and limits the lifespan put on the app.

All are `async def` although none awaits: FastAPI runs a plain `def` dependency in a worker
thread, and that hand-off cost more CPU than the rest of an acquire (bench/README.md). The hot
routes take all three as one `ContextDep`: FastAPI resolves each dependency through a
recursive `solve_dependencies` call, the largest part of its per-request work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.datastructures import State

from tenure_server.app.auth import Authenticator
from tenure_server.app.operations import Operations
from tenure_server.app.status import StatusReader
from tenure_server.app.telemetry import Telemetry
from tenure_server.db.jobs import JobsRepository
from tenure_server.db.monitoring import MonitoringRepository
from tenure_server.db.repository import Repository
from tenure_server.domain.limits import Limits
from tenure_server.domain.principals import Principal
from tenure_server.domain.ratelimit import RateLimiter


async def _operations(request: Request) -> Operations:
    operations: Operations = request.app.state.operations
    return operations


async def _repository(request: Request) -> Repository:
    repository: Repository = request.app.state.repository
    return repository


async def _limits(request: Request) -> Limits:
    limits: Limits = request.app.state.limits
    return limits


def authenticate(state: State, authorization: str | None) -> Principal:
    """The principal a request's Authorization header names (the anonymous admin when
    authentication is off), after its rate limit, if one is configured."""
    authenticator: Authenticator = state.authenticator
    principal = authenticator.authenticate(authorization)
    limiter: RateLimiter | None = state.rate_limiter
    if limiter is not None:
        limiter.take(principal.label)
    return principal


async def _caller(request: Request) -> Principal:
    return authenticate(request.app.state, request.headers.get("authorization"))


@dataclass(frozen=True, slots=True)
class Context:
    """The caller (authenticated, rate limited), the operations and the limits, in one."""

    caller: Principal
    operations: Operations
    limits: Limits


def context_of(state: State, authorization: str | None) -> Context:
    """What a hot route works with, for a request with this Authorization header."""
    return Context(authenticate(state, authorization), state.operations, state.limits)


async def _context(request: Request) -> Context:
    return context_of(request.app.state, request.headers.get("authorization"))


OperationsDep = Annotated[Operations, Depends(_operations)]
RepositoryDep = Annotated[Repository, Depends(_repository)]
LimitsDep = Annotated[Limits, Depends(_limits)]
CallerDep = Annotated[Principal, Depends(_caller)]
ContextDep = Annotated[Context, Depends(_context)]


# What the monitoring routes receive: the repositories, the status reader and the telemetry that
# create_app and its lifespan put on the app.
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
