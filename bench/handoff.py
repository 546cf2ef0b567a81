"""Hand-off latency: from the moment a holder sends its release to the moment a waiter (blocked
in acquire with wait_seconds) holds the lease. Prints the median and p99 over many hand-offs.
The requests go over loadgen.py's lean keep-alive connections, as the throughput figures' go
over wrk's: httpx spends more CPU per request than the service does (bench/README.md, "What
runs", has the figure).

    .venv/bin/python bench/handoff.py [--rounds 300] [--workers 1] [--across] [--floor]
        [--database-url URL]

With `--workers 2` the two connections land on one worker or on two, the kernel's choice for the
whole run: a run measures either releases that hand the lease to their own process's waiter (one
commit), or wakes through PostgreSQL's NOTIFY and the waiter's own acquire (two). `--across`
measures the second case for sure: a second `tenure serve` on the same database, one connection
to each (the full bench measures both cases so: bench/scenarios.py).

`--floor` also measures the database alone (`database_hand_offs`): the service's own release
and acquire statements over an asyncpg pool, the waiter woken by its LISTEN connection, the same
park before each release, and no HTTP. Two commits in sequence and the processes they wake are
what any hand-off through a release and a new acquire costs; the service's figure above that is
its own.
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
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg

# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from loadgen import Http
from tests.support import postgres
from tests.support.processes import tenure_service

from tenure_server.db.leases import QUERIES
from tenure_server.db.notifications import CHANNEL
from tenure_server.db.pool import create_pool

# The waiter is parked on the server this long before each release.
PARK_SECONDS = 0.02


async def hand_offs(url: str, rounds: int, other: str | None = None) -> list[float]:
    """Hand-offs between two connections to `url`, or one to `url` and one to `other` (another
    replica on the same database), the two taking turns to hold and to wait."""
    latencies: list[float] = []
    # A name of its own: a database given by URL may hold an earlier run's baton.
    lease = f"/v1/leases/baton-{uuid.uuid4().hex[:12]}"
    holding, waiting = [await _connect(one) for one in (url, other or url)]
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
            await asyncio.sleep(PARK_SECONDS)  # the waiter is parked on the server
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


async def database_hand_offs(database_url: str, rounds: int) -> list[float]:
    """The hand-off with no service: the statements a release and the woken waiter's acquire run
    (release_lease, which notifies the awaited lease; acquire_lease), from the release's send to
    the acquire's answer, the waiter woken by a LISTEN connection as the service's is."""
    latencies: list[float] = []
    name = f"floor-{uuid.uuid4().hex[:12]}"
    service_pool = await create_pool(
        database_url, min_size=2, max_size=2, statement_timeout_ms=10_000, lock_timeout_ms=5_000
    )
    pool = service_pool.asyncpg  # asyncpg's pool with the service's session settings
    listener = await asyncpg.connect(database_url)
    woken = asyncio.Event()
    await listener.add_listener(CHANNEL, lambda *_: woken.set())
    try:
        held = await pool.fetchrow(QUERIES["acquire_lease"], name, "h0", 60.0, None)
        for round_ in range(1, rounds + 1):
            await pool.execute(QUERIES["await_lease"], name, 30.0)
            await asyncio.sleep(PARK_SECONDS)
            woken.clear()
            assert held is not None
            released = (name, held["holder"], held["generation"], None, held["grant_id"])
            sent = time.perf_counter()
            release = asyncio.create_task(pool.fetchrow(QUERIES["release_lease"], *released))
            await woken.wait()
            held = await pool.fetchrow(QUERIES["acquire_lease"], name, f"h{round_}", 60.0, None)
            latencies.append(time.perf_counter() - sent)
            await release
    finally:
        await listener.close()
        await service_pool.close()
    return latencies


async def _connect(url: str) -> Http:
    parts = urlsplit(url)
    return await Http.open(parts.hostname or "", parts.port or 80)


def _summary(what: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{what}, {len(ordered)} rounds: median {statistics.median(ordered) * 1000:.2f} ms, "
        f"p99 {p99 * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms"
    )


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
    parser.add_argument("--floor", action="store_true", help="also the database alone")
    parser.add_argument("--across", action="store_true", help="also across two replicas")
    arguments = parser.parse_args()
    with ExitStack() as stack:
        # A second replica and the floor need the database's URL: the one given, or our own.
        url = arguments.database_url
        if (arguments.floor or arguments.across) and not url:
            url = stack.enter_context(postgres.server(None))
        replicas = [
            stack.enter_context(
                tenure_service(
                    "--workers", str(arguments.workers), database_url=url, output=subprocess.DEVNULL
                )
            )
            for _ in range(2 if arguments.across else 1)
        ]
        service = asyncio.run(hand_offs(replicas[0].url, arguments.rounds))
        print(_summary("hand-off release → waiter holds it", service))
        if arguments.across:
            across = asyncio.run(hand_offs(replicas[0].url, arguments.rounds, replicas[1].url))
            print(_summary("the same across two replicas", across))
        if url and arguments.floor:
            floor = asyncio.run(database_hand_offs(url, arguments.rounds))
            print(_summary("the database alone (no HTTP)", floor))


if __name__ == "__main__":
    main()
