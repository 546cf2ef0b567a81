"""The clients' connection pools: many concurrent requests reuse the connections they opened,
instead of closing most of them and opening new ones for the next requests (issue 29)."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
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


# A Tenure made before fork() (reqwest's pool, whose runtime a child does not have), used in the
# forked child, and a Tenure made in the child; each child's exit status says whether both
# answered. In a process of its own: forking pytest itself would fork its threads' state too.
FORKED = """
import os, sys
from tenure import Tenure
client = Tenure(sys.argv[1], timeout=5)
client.release(client.acquire("fork-parent", 30))
child = os.fork()
if child == 0:
    client.release(client.acquire("fork-child", 30))
    with Tenure(sys.argv[1], timeout=5) as fresh:
        fresh.release(fresh.acquire("fork-fresh", 30))
    os._exit(0)
_, status = os.waitpid(child, 0)
client.release(client.acquire("fork-parent", 30))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_sync_client_works_in_a_forked_child(service_url: str) -> None:
    """A Tenure made before fork() answers in the forked child (httpx's own pool there: reqwest's
    runtime does not survive a fork), and so does one made in the child."""
    done = subprocess.run(
        [sys.executable, "-c", FORKED, service_url], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
