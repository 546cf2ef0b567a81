"""The async client's connection pool: many concurrent requests reuse the connections they
opened, instead of closing most of them and opening new ones for the next requests (issue 29)."""

from __future__ import annotations

import asyncio
import itertools

from tenure import AsyncTenure
from tests.support.live_service import Proxy

CONCURRENT = 32  # more than httpx's default of 20 connections kept open
ROUNDS = 3
names = (f"pool-{n}" for n in itertools.count())


async def test_async_client_reuses_its_connections(proxy: Proxy) -> None:
    """Rounds of 32 concurrent requests of one AsyncTenure open at most 32 connections."""
    async with AsyncTenure(proxy.url) as client:
        for _ in range(ROUNDS):
            leases = await asyncio.gather(
                *(client.acquire(next(names), 30) for _ in range(CONCURRENT))
            )
            await asyncio.gather(*(client.release(lease) for lease in leases))
    assert proxy.connections <= CONCURRENT
