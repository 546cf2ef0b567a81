"""The replica's own gauges on /metrics: `tenure_ready` (the /readyz check, at scrape time) and the
database pool's connections, in use and idle, and its maximum."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tenure_server.adapters.telemetry import Telemetry
from tenure_server.db.pool import create_pool
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_metrics import scrape, value
from tests.support.lifespan import running
from tests.support.postgres import unreachable

POOL_MAX = 7


@pytest.fixture
async def uncached(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The app with no metrics cache, so that each scrape checks readiness again."""
    settings = Settings(
        database_url=database_url, pool_min_size=1, pool_max_size=POOL_MAX, metrics_cache_seconds=0
    )
    app: FastAPI = create_app(settings)
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as client:
            yield client


async def test_ready_follows_the_readiness_check(
    uncached: httpx.AsyncClient, database_url: str
) -> None:
    """tenure_ready is 1 while /readyz passes and 0 once the schema is behind this version."""
    assert (await uncached.get("/readyz")).status_code == 200
    assert value(await scrape(uncached), "tenure_ready") == 1
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("DELETE FROM tenure_migrations")
    finally:
        await connection.close()
    assert (await uncached.get("/readyz")).status_code == 503
    samples = await scrape(uncached)
    assert value(samples, "tenure_ready") == 0
    assert ("tenure_ready", ()) in samples


async def test_a_scrape_answers_while_the_database_is_unreachable(
    uncached: httpx.AsyncClient, database_url: str, server_url: str
) -> None:
    """With the database refusing connections, /metrics still answers 200 within the readiness
    timeout, saying not ready and database down, with the counters and pool gauges; readiness
    comes back with the database."""
    async with unreachable(server_url, database_url):
        started = time.monotonic()
        samples = await scrape(uncached)
        assert time.monotonic() - started < 5
        assert value(samples, "tenure_ready") == 0
        assert value(samples, "tenure_database_up") == 0
        assert value(samples, "tenure_database_pool_max_connections") == POOL_MAX
    assert value(await scrape(uncached), "tenure_ready") == 1


async def test_pool_gauges_report_the_pool_at_scrape_time(uncached: httpx.AsyncClient) -> None:
    """The app's pool: its maximum as configured, and its open connections split into in use and
    idle (the scrape itself holds none while the text is written)."""
    samples = await scrape(uncached)
    assert value(samples, "tenure_database_pool_max_connections") == POOL_MAX
    in_use = value(samples, "tenure_database_pool_connections", state="in_use")
    idle = value(samples, "tenure_database_pool_connections", state="idle")
    assert in_use == 0
    assert 1 <= idle <= POOL_MAX


async def test_pool_gauges_count_connections_in_use(database_url: str) -> None:
    """A connection taken from a real pool counts as in use until it is given back; a closed pool
    reports zeros, so that a stopped worker adds nothing to the replica's sum."""
    telemetry = Telemetry(cache_seconds=5)
    gauges, registry = telemetry.pool, telemetry.metrics.registry

    def reading() -> tuple[float | None, float | None, float | None]:
        gauges.sample()
        return (
            registry.get_sample_value("tenure_database_pool_connections", {"state": "in_use"}),
            registry.get_sample_value("tenure_database_pool_connections", {"state": "idle"}),
            registry.get_sample_value("tenure_database_pool_max_connections"),
        )

    pool = await create_pool(
        database_url, min_size=2, max_size=3, statement_timeout_ms=0, lock_timeout_ms=0
    )
    try:
        async with gauges.watching(pool):
            assert reading() == (0, 2, 3)
            async with pool.acquire(), pool.acquire(), pool.acquire():
                assert reading() == (3, 0, 3)
            assert reading() == (0, 3, 3)
        assert reading() == (0, 0, 0)
    finally:
        await pool.close()


async def test_the_database_clock_is_watched_from_the_start(uncached: httpx.AsyncClient) -> None:
    """Each replica reads the database's clock from start-up: the offset gauge and both jump
    counters are on /metrics at once, at 0 (adapters/database_clock.py)."""
    samples = await scrape(uncached)
    assert ("tenure_database_clock_offset_seconds", ()) in samples
    assert abs(value(samples, "tenure_database_clock_offset_seconds")) < 0.25
    for direction in ("forward", "backward"):
        key = ("tenure_database_clock_jumps_total", (("direction", direction),))
        assert samples.get(key) == 0
