"""The clients' connection pools: many concurrent requests reuse the connections they opened,
instead of closing most of them and opening new ones for the next requests (issue 29)."""

from __future__ import annotations

import asyncio
import itertools
from concurrent.futures import ThreadPoolExecutor

from tenure import AsyncTenure, Lease, Tenure
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


def test_sync_client_reuses_its_connections(proxy: Proxy) -> None:
    """Rounds of 32 concurrent requests of one Tenure, from 32 threads, open at most 32
    connections."""
    with Tenure(proxy.url) as client, ThreadPoolExecutor(CONCURRENT) as threads:

        def cycle(name: str) -> Lease:
            return client.release(client.acquire(name, 30))

        for _ in range(ROUNDS):
            list(threads.map(cycle, [next(names) for _ in range(CONCURRENT)]))
    assert proxy.connections <= CONCURRENT
