"""Takeover time after SIGKILL of a holder: a holder process takes a lease through the client SDK
(TTL 2 s, renewed in the background every TTL/3) and is SIGKILLed at a random moment; a waiter
already parked in acquire with wait_seconds measures from the kill to holding the lease. The
bound is the TTL plus one second (the holder's last renewal can have been just before the kill).

    .venv/bin/python bench/takeover.py [--rounds 3] [--ttl 2] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from tests.support.processes import tenure_service

WAIT_SECONDS = 15.0


def hold(url: str, name: str, ttl: float) -> None:
    """The victim: hold `name` until killed (or for a minute at most)."""
    from tenure import Tenure

    with Tenure(url, holder=f"victim-{os.getpid()}") as client, client.lease(name, ttl=ttl):
        print("held", flush=True)
        time.sleep(60)


def _start_holder(url: str, name: str, ttl: float) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--hold", url, name, str(ttl)]
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None  # stdout=PIPE
    if holder.stdout.readline().strip() != "held":
        holder.kill()
        raise RuntimeError("the holder process did not take the lease")
    return holder


async def _round(api: httpx.AsyncClient, url: str, name: str, ttl: float) -> float:
    holder = await asyncio.to_thread(_start_holder, url, name, ttl)
    body = {"holder": f"waiter-{name}", "ttl_seconds": 60, "wait_seconds": WAIT_SECONDS}
    waiting = asyncio.create_task(api.post(f"/v1/leases/{name}/acquire", json=body))
    # A random phase of the renewal cycle (renewals every ttl/3), the waiter parked by then.
    await asyncio.sleep(random.uniform(0.3, 0.3 + ttl))
    if waiting.done():
        raise RuntimeError(f"the waiter got the lease while its holder lived: {waiting.result()}")
    holder.send_signal(signal.SIGKILL)
    killed = time.perf_counter()
    response = await waiting
    took = time.perf_counter() - killed
    await asyncio.to_thread(holder.wait)
    if response.status_code != 200:
        raise RuntimeError(f"the waiter was refused: {response.text}")
    return took


async def takeovers(url: str, rounds: int, ttl: float) -> list[float]:
    """Seconds from SIGKILL of the holder to the waiter holding the lease, one per round."""
    async with httpx.AsyncClient(base_url=url, timeout=WAIT_SECONDS + 10) as api:
        return [await _round(api, url, f"takeover-{n}", ttl) for n in range(rounds)]


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--hold":
        hold(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ttl", type=float, default=2.0)
    parser.add_argument("--database-url")
    arguments = parser.parse_args()
    service = tenure_service(database_url=arguments.database_url, output=subprocess.DEVNULL)
    with service as tenure:
        times = asyncio.run(takeovers(tenure.url, arguments.rounds, arguments.ttl))
    print(
        f"takeover after SIGKILL, TTL {arguments.ttl:g} s, {len(times)} rounds: "
        f"median {statistics.median(times):.3f} s, max {max(times):.3f} s "
        f"(bound: TTL + 1 s = {arguments.ttl + 1:g} s)"
    )


if __name__ == "__main__":
    main()
