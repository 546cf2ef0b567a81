"""The event stream across replicas and workers on one database, and at shutdown."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack

import httpx
import pytest

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_leases import held
from tests.support.event_streams import STREAM, EventReader, served, stream
from tests.support.processes import tenure_service


async def test_an_event_served_by_one_replica_reaches_the_streams_of_every_replica(
    database_url: str,
) -> None:
    """A lease acquired through one replica is on the streams of both, with the same id: the
    events travel through the database, not through the process that served them."""
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=5)
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(served(create_app(settings)))
        second = await stack.enter_async_context(served(create_app(settings)))
        on_first = await stack.enter_async_context(stream(first))
        on_second = await stack.enter_async_context(stream(second))
        await held(first, "served-by-first", "a")
        await held(second, "served-by-second", "b")
        seen_first = await on_first.events(2)
        seen_second = await on_second.events(2)
    assert sorted(event.data["lease"] for event in seen_second) == [
        "served-by-first",
        "served-by-second",
    ]
    # In the same order too: each replica publishes its own events, and PostgreSQL delivers
    # every notification to every listener in the order they were committed.
    assert [(event.id, event.data) for event in seen_first] == [
        (event.id, event.data) for event in seen_second
    ]


@pytest.mark.slow
async def test_workers_share_the_stream_and_shutdown_ends_open_streams(database_url: str) -> None:
    """Under `tenure serve --workers 2` a stream sees the events of both workers; SIGTERM ends
    the open stream at once, so the server stops without waiting for its client."""
    with tenure_service("--workers", "2", database_url=database_url) as service:
        async with (
            httpx.AsyncClient(base_url=service.url, timeout=30) as client,
            stream(client) as events,
        ):
            # A new connection for each acquire, so that both workers serve some.
            for index in range(8):
                async with httpx.AsyncClient(base_url=service.url) as once:
                    await held(once, f"lease-{index}", "a")
            seen = await events.events(8)
            assert sorted(event.data["lease"] for event in seen) == [
                f"lease-{index}" for index in range(8)
            ]
            # The open streams of the replica, whichever worker answers the scrape.
            for _ in range(4):
                async with httpx.AsyncClient(base_url=service.url) as once:
                    assert "tenure_event_streams 1.0" in (await once.get("/metrics")).text
            started = time.monotonic()
            service.process.terminate()
            await asyncio.to_thread(service.process.wait, 20)
            assert time.monotonic() - started < 10
            assert await remaining(events) == []


async def remaining(events: EventReader) -> list[str]:
    """The events left before the stream's end."""
    found = []
    while (event := await events.next()) is not None:
        found.append(event.event)
    return found


def test_the_route_is_documented_as_an_event_stream() -> None:
    """OpenAPI names the route's media type and its resumption header."""
    document = create_app(Settings()).openapi()
    operation = document["paths"][STREAM]["get"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    headers = [item["name"] for item in operation["parameters"] if item["in"] == "header"]
    assert headers == ["Last-Event-ID"]
