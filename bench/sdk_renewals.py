"""What holding many leases through the SDK costs: one `AsyncTenure` client holds N lease
handles (TTL 30 s) for S seconds against its own `tenure serve` (one worker, embedded
PostgreSQL); prints the renew requests the client sent and the service's CPU meanwhile. The
handles of a client share one renewal loop that renews them in batches (client/tenure/_renewer.py).

    .venv/bin/python bench/sdk_renewals.py [--leases 1000] [--seconds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx

# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from cpu import CpuMeter
from tests.support.processes import tenure_service

from tenure import AsyncTenure

TTL_SECONDS = 30.0


class Counting(httpx.AsyncHTTPTransport):
    """The real transport, counting renew requests (single or batch)."""

    renewals = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/renew"):
            self.renewals += 1
        return await super().handle_async_request(request)


async def hold(url: str, meter: CpuMeter, leases: int, seconds: float) -> None:
    transport = Counting()
    async with AsyncTenure(url, transport=transport) as client, AsyncExitStack() as stack:
        for index in range(leases):
            await stack.enter_async_context(client.lease(f"sdk-{index}", TTL_SECONDS))
        tasks = len(asyncio.all_tasks())
        meter.start()
        before, started = transport.renewals, time.monotonic()
        await asyncio.sleep(seconds)
        sent, elapsed = transport.renewals - before, time.monotonic() - started
        cpu = meter.elapsed()
    print(
        f"{leases} handles of one client for {elapsed:.0f} s: {sent} renew requests "
        f"({sent / elapsed:.2f}/s), service {100 * cpu / elapsed:.2f}% of one core; "
        f"client threads {threading.active_count()}, tasks {tasks}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=40.0)
    options = parser.parse_args()
    with tenure_service() as server:
        meter = CpuMeter(server.pid)
        asyncio.run(hold(server.url, meter, options.leases, options.seconds))


if __name__ == "__main__":
    main()
