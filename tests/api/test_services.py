"""The wiring: the services are registered once, typed, in the lifespan state (what each request
gets a copy of), and nothing is set on `app.state`."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from tenure_server.app.services import SERVICES, Services
from tenure_server.server.app import ADAPTERS, Adapters, create_app
from tenure_server.server.settings import Settings


async def test_the_lifespan_registers_every_service_in_its_state(settings: Settings) -> None:
    """The lifespan yields the typed registries, every service set, and leaves app.state empty."""
    app = create_app(settings)
    async with app.router.lifespan_context(app) as state:
        assert state is not None
        assert set(state) == {SERVICES, ADAPTERS}
        services = state[SERVICES]
        assert isinstance(services, Services)
        assert isinstance(state[ADAPTERS], Adapters)
        assert state[ADAPTERS].monitor is not None
        unset = [
            field.name
            for field in dataclasses.fields(services)
            if getattr(services, field.name) is None and field.name != "rate_limiter"
        ]
        assert unset == []
        assert vars(app.state)["_state"] == {}


async def test_a_request_without_the_lifespan_state_says_why() -> None:
    """An app called without its lifespan's state (a server that runs no lifespan) fails with a
    message naming the cause, not an AttributeError from deep inside a route."""
    app = create_app(Settings())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        with pytest.raises(RuntimeError, match="lifespan state"):
            await client.get("/v1/leases/report")
        with pytest.raises(RuntimeError, match="lifespan state"):
            await client.post("/v1/leases/report/acquire", json={"holder": "a", "ttl_seconds": 5})
