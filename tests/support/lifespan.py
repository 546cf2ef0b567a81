"""The app run in this process as a server runs it: its lifespan, and each request's scope
carrying a copy of the lifespan state (the registry of services, `app/services.py`), as uvicorn
gives it. `httpx.ASGITransport` runs no lifespan, and the routes find nothing without the state."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from tenure_server.adapters.monitor import Monitor
from tenure_server.app.services import SERVICES, Services
from tenure_server.server.app import ADAPTERS, Adapters

Message = MutableMapping[str, Any]


class Running:
    """An app whose lifespan runs: an ASGI app (for `httpx.ASGITransport`), its registry of
    services and the adapters it drives."""

    def __init__(self, app: FastAPI, state: dict[str, Any]) -> None:
        self.app = app
        self.state = state

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        await self.app({**scope, "state": self.state.copy()}, receive, send)

    @property
    def services(self) -> Services:
        return services_in(self.state)

    @property
    def adapters(self) -> Adapters:
        return adapters_in(self.state)

    @property
    def monitor(self) -> Monitor:
        """The monitor, which the app's settings enable."""
        monitor = self.adapters.monitor
        if monitor is None:
            raise LookupError("the app runs no monitor (TENURE_MONITOR_ENABLED is off)")
        return monitor


def services_in(state: MutableMapping[str, Any]) -> Services:
    services: Services = state[SERVICES]
    return services


def adapters_in(state: MutableMapping[str, Any]) -> Adapters:
    """The adapters in a lifespan state (`Running.state`, or uvicorn's `server.lifespan.state`)."""
    adapters: Adapters = state[ADAPTERS]
    return adapters


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[Running]:
    """Run the app's lifespan while inside."""
    async with app.router.lifespan_context(app) as state:
        yield Running(app, dict(state or {}))
