"""Hand-off latency: from the moment a holder sends its release to the moment a waiter (blocked
in acquire with wait_seconds) holds the lease. Prints the median and p99 over many hand-offs.

    .venv/bin/python bench/handoff.py [--rounds 300] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service import running_service


async def hand_offs(url: str, rounds: int) -> list[float]:
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as api:
        holder, generation = "h0", 0
        first = await api.post(
            "/v1/leases/baton/acquire", json={"holder": holder, "ttl_seconds": 60}
        )
        generation = first.json()["generation"]
        for round_ in range(1, rounds + 1):
            waiter = f"h{round_}"
            waiting = asyncio.create_task(
                api.post(
                    "/v1/leases/baton/acquire",
                    json={"holder": waiter, "ttl_seconds": 60, "wait_seconds": 30},
                )
            )
            await asyncio.sleep(0.02)  # the waiter is parked on the server
            sent = time.perf_counter()
            await api.post(
                "/v1/leases/baton/release", json={"holder": holder, "generation": generation}
            )
            response = await waiting
            latencies.append(time.perf_counter() - sent)
            if response.status_code != 200:
                raise RuntimeError(response.text)
            holder, generation = waiter, response.json()["generation"]
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--database-url")
    arguments = parser.parse_args()
    with running_service(database_url=arguments.database_url) as url:
        latencies = sorted(asyncio.run(hand_offs(url, arguments.rounds)))
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"hand-off release → waiter holds it, {len(latencies)} rounds: "
        f"median {statistics.median(latencies) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, "
        f"max {latencies[-1] * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
