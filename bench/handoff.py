"""Hand-off latency: from the moment a holder sends its release to the moment a waiter (blocked
in acquire with wait_seconds) holds the lease. Prints the median and p99 over many hand-offs.
The requests go over loadgen.py's lean keep-alive connections, as the throughput figures' go
over wrk's: httpx spends more CPU per request than the service does (bench/README.md, "What
runs", has the figure).

    .venv/bin/python bench/handoff.py [--rounds 300] [--workers 1] [--database-url URL]

With `--workers 2` (as the full bench serves) the two connections land on one worker or on two,
the kernel's choice for the whole run: a run measures either releases that wake their own
worker's waiter, or wakes through PostgreSQL's NOTIFY.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from loadgen import Http
from tests.support.processes import tenure_service


async def hand_offs(url: str, rounds: int) -> list[float]:
    latencies: list[float] = []
    # A name of its own: a database given by URL may hold an earlier run's baton.
    lease = f"/v1/leases/baton-{uuid.uuid4().hex[:12]}"
    parts = urlsplit(url)
    holding, waiting = [await Http.open(parts.hostname or "", parts.port or 80) for _ in "hw"]
    try:
        holder = "h0"
        status, answer = await holding.post(
            f"{lease}/acquire", {"holder": holder, "ttl_seconds": 60}
        )
        generation, grant = _granted(status, answer)
        for round_ in range(1, rounds + 1):
            waiter = f"h{round_}"
            wanted = {"holder": waiter, "ttl_seconds": 60, "wait_seconds": 30}
            parked = asyncio.create_task(waiting.post(f"{lease}/acquire", wanted))
            await asyncio.sleep(0.02)  # the waiter is parked on the server
            released = {"holder": holder, "generation": generation, "grant": grant}
            sent = time.perf_counter()
            await holding.post(f"{lease}/release", released)
            status, answer = await parked
            latencies.append(time.perf_counter() - sent)
            holder, (generation, grant) = waiter, _granted(status, answer)
            holding, waiting = waiting, holding
    finally:
        await holding.close()
        await waiting.close()
    return latencies


def _granted(status: int, answer: bytes) -> tuple[int, str]:
    """The generation and grant of an acquire's answer: the holder's release names both."""
    if status != 200:
        raise RuntimeError(answer.decode(errors="replace"))
    acquired = json.loads(answer)
    generation: int = acquired["generation"]
    grant: str = acquired["grant"]
    return generation, grant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--database-url")
    parser.add_argument("--workers", type=int, default=1)
    arguments = parser.parse_args()
    service = tenure_service(
        "--workers",
        str(arguments.workers),
        database_url=arguments.database_url,
        output=subprocess.DEVNULL,
    )
    with service as tenure:
        latencies = sorted(asyncio.run(hand_offs(tenure.url, arguments.rounds)))
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"hand-off release → waiter holds it, {len(latencies)} rounds: "
        f"median {statistics.median(latencies) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, "
        f"max {latencies[-1] * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
