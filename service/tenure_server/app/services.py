"""The service registry: every service a route uses, built once by the lifespan
(`server/app.py`) and registered in its state, from which each request's scope gets a copy
(`request.state.services`, `scope["state"]["services"]` in middleware). Typed by the use cases of
`app` and the ports the adapters implement, so that `api` imports neither `db` nor `adapters`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenure_server.app.history import History, Scrape
from tenure_server.app.jobs import Jobs
from tenure_server.app.operations import Operations
from tenure_server.app.ports import Authenticator, EventStream, HealthStore
from tenure_server.domain.limits import Limits
from tenure_server.domain.ratelimit import RateLimiter

# The key of the registry in the lifespan state.
SERVICES = "services"


@dataclass(frozen=True, slots=True)
class Services:
    operations: Operations
    limits: Limits
    authenticator: Authenticator
    # None: no rate limit configured.
    rate_limiter: RateLimiter | None
    jobs: Jobs
    history: History
    health: HealthStore
    telemetry: Scrape
    events: EventStream[Any]
