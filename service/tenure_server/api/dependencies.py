"""What handlers receive: the caller, and the services the lifespan registered in its state
(`app/services.py`), read from the request's copy of that state.

All are `async def` although none awaits: FastAPI runs a plain `def` dependency in a worker
thread, and that hand-off cost more CPU than the rest of an acquire (bench/README.md). The hot
routes take the caller, the operations and the limits as one `ContextDep`: FastAPI resolves each
dependency through a recursive `solve_dependencies` call, the largest part of its per-request
work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, NamedTuple

from fastapi import Depends, Request

from tenure_server.app.history import History, Scrape
from tenure_server.app.jobs import Jobs
from tenure_server.app.operations import Operations
from tenure_server.app.ports import EventStream, HealthStore
from tenure_server.app.services import SERVICES, Services
from tenure_server.domain.limits import Limits
from tenure_server.domain.principals import Principal


def services_of(scope: Mapping[str, Any]) -> Services:
    """The registry in a request's copy of the lifespan state (ASGI `scope["state"]`)."""
    try:
        services: Services = scope["state"][SERVICES]
    except KeyError:
        raise RuntimeError(
            "no services in the request's lifespan state: the app runs under a server that "
            "runs its lifespan and passes its state (uvicorn does; in-process, see "
            "tests/support/lifespan.py)"
        ) from None
    return services


def authenticate(services: Services, authorization: str | None) -> Principal:
    """The principal a request's Authorization header names (the anonymous admin when
    authentication is off), after its rate limit, if one is configured."""
    principal = services.authenticator.authenticate(authorization)
    limiter = services.rate_limiter
    if limiter is not None:
        limiter.take(principal.label)
    return principal


async def _caller(request: Request) -> Principal:
    return authenticate(services_of(request.scope), request.headers.get("authorization"))


class Context(NamedTuple):
    """The caller (authenticated, rate limited), the operations and the limits, in one. A named
    tuple: every hot request builds one, at less than half the cost of a frozen dataclass."""

    caller: Principal
    operations: Operations
    limits: Limits


def context_of(scope: Mapping[str, Any], authorization: str | None) -> Context:
    """What a hot route works with, for a request with this Authorization header."""
    services = services_of(scope)
    return Context(authenticate(services, authorization), services.operations, services.limits)


async def _context(request: Request) -> Context:
    return context_of(request.scope, request.headers.get("authorization"))


# One accessor per service the routes use.
async def _operations(request: Request) -> Operations:
    return services_of(request.scope).operations


async def _limits(request: Request) -> Limits:
    return services_of(request.scope).limits


async def _jobs(request: Request) -> Jobs:
    return services_of(request.scope).jobs


async def _history(request: Request) -> History:
    return services_of(request.scope).history


async def _health(request: Request) -> HealthStore:
    return services_of(request.scope).health


async def _telemetry(request: Request) -> Scrape:
    return services_of(request.scope).telemetry


async def _events(request: Request) -> EventStream[Any]:
    return services_of(request.scope).events


CallerDep = Annotated[Principal, Depends(_caller)]
ContextDep = Annotated[Context, Depends(_context)]
OperationsDep = Annotated[Operations, Depends(_operations)]
LimitsDep = Annotated[Limits, Depends(_limits)]
JobsDep = Annotated[Jobs, Depends(_jobs)]
HistoryDep = Annotated[History, Depends(_history)]
HealthDep = Annotated[HealthStore, Depends(_health)]
TelemetryDep = Annotated[Scrape, Depends(_telemetry)]
EventsDep = Annotated[EventStream[Any], Depends(_events)]
