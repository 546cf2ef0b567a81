"""Baseline 2: the service's statements straight from one asyncpg process (uvloop), N connections
each looping one workload; no HTTP. Prints one Measurement as JSON.

    .venv/bin/python bench/raw_asyncpg.py --url URL --workload acquire --connections 16 --seconds 3
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeAlias

import asyncpg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import (
    BATCH_PREFIX,
    BATCH_SIZE,
    FENCE_LEASE,
    FENCE_RESOURCES,
    HOLDER,
    RENEW_POOL,
    RENEW_PREFIX,
    TTL_SECONDS,
    WINDOW_LEASE_PREFIX,
    acquire_args,
    batch_resources,
    claim_args,
    queries,
    release_args,
    renew_args,
    renew_many_args,
    summarize,
    verify_args,
    verify_many_args,
    window_args,
)

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"
# One operation of a workload on one connection: (connection, worker index, sequence number);
# it returns how many operations succeeded (a batch renews many leases; a bool counts 0 or 1).
Step = Callable[[Connection, int, int], Awaitable[int]]
WORKLOADS = (
    "acquire",
    "renew",
    "release",
    "cycle",
    "claim_complete",
    "verify",
    "hot",
    "batch_renew",
    "batch_verify",
)


def steps(prefix: str, grant: str | None = None) -> dict[str, Step]:
    """The workloads' operations; release names `grant`, that of the prefilled leases."""
    q = queries()

    async def acquire(c: Connection, _w: int, _n: int) -> bool:
        name = f"{prefix}{random.randrange(10**9)}"
        return (
            await c.fetchrow(q["acquire_lease"], *acquire_args(name, HOLDER, TTL_SECONDS))
            is not None
        )

    async def renew(c: Connection, _w: int, _n: int) -> bool:
        name = f"{RENEW_PREFIX}0-{random.randrange(RENEW_POOL)}"
        row = await c.fetchrow(q["renew_lease"], *renew_args(name, HOLDER, 1, TTL_SECONDS))
        return row is not None

    async def release(c: Connection, worker: int, n: int) -> bool:
        name = f"{prefix}{worker}-{n}"
        arguments = release_args(name, HOLDER, 1, grant)
        return await c.fetchrow(q["release_lease"], *arguments) is not None

    async def cycle(c: Connection, _w: int, _n: int) -> bool:
        name = f"{prefix}{random.randrange(10**9)}"
        row = await c.fetchrow(q["acquire_lease"], *acquire_args(name, HOLDER, TTL_SECONDS))
        if row is None:
            return False
        arguments = release_args(name, HOLDER, row["generation"], row["grant_id"])
        return await c.fetchrow(q["release_lease"], *arguments) is not None

    async def claim_complete(c: Connection, worker: int, n: int) -> bool:
        job, window = f"cwjob-{worker}", f"{prefix}{n}"
        lease = f"{WINDOW_LEASE_PREFIX}0-{worker}"
        if await c.fetchrow(q["claim_window"], *claim_args(job, window, lease, HOLDER, 1)) is None:
            return False
        arguments = window_args(job, window, lease, HOLDER, 1)
        return await c.fetchrow(q["complete_window"], *arguments) is not None

    async def verify(c: Connection, _w: int, _n: int) -> bool:
        resource = f"fr-{random.randrange(FENCE_RESOURCES)}"
        return (
            await c.fetchrow(q["verify_fence"], *verify_args(resource, FENCE_LEASE, 1)) is not None
        )

    async def hot(c: Connection, _w: int, _n: int) -> bool:
        row = await c.fetchrow(q["acquire_lease"], *acquire_args("hot-raw", HOLDER, TTL_SECONDS))
        return row is not None

    async def batch_renew(c: Connection, worker: int, _n: int) -> int:
        names = [f"{BATCH_PREFIX}{worker}-{k}" for k in range(BATCH_SIZE)]
        arguments = renew_many_args(names, [1] * BATCH_SIZE, HOLDER, TTL_SECONDS)
        return len(await c.fetch(q["renew_leases"], *arguments))

    async def batch_verify(c: Connection, worker: int, _n: int) -> int:
        resources = batch_resources(worker)
        arguments = verify_many_args(resources, [FENCE_LEASE] * BATCH_SIZE, [1] * BATCH_SIZE)
        return len(await c.fetch(q["verify_fences"], *arguments))

    return {
        "batch_renew": batch_renew,
        "batch_verify": batch_verify,
        "acquire": acquire,
        "renew": renew,
        "release": release,
        "cycle": cycle,
        "claim_complete": claim_complete,
        "verify": verify,
        "hot": hot,
    }


async def measure(
    url: str, workload: str, connections: int, seconds: float, prefix: str, grant: str | None
) -> str:
    step = steps(prefix, grant)[workload]
    opened = [
        await asyncpg.connect(
            url, server_settings={"default_transaction_isolation": "read committed"}
        )
        for _ in range(connections)
    ]
    latencies: list[float] = []
    done = errors = 0

    async def loop(connection: Connection, worker: int, deadline: float) -> None:
        nonlocal done, errors
        n = 0
        while (started := time.perf_counter()) < deadline:
            count = await step(connection, worker, n)
            latencies.append(time.perf_counter() - started)
            done, errors, n = done + count, errors + (count == 0), n + 1

    try:
        for index, connection in enumerate(opened):  # prepare the statement on each connection
            await step(connection, index, -1)
        latencies.clear()
        done = errors = 0
        cpu, began = time.process_time(), time.perf_counter()
        deadline = began + seconds
        await asyncio.gather(*(loop(c, i, deadline) for i, c in enumerate(opened)))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        await asyncio.gather(*(connection.close() for connection in opened))
    measured = summarize(latencies, elapsed, errors)
    return replace(measured, ops=done, app_cpu_seconds=cpu).to_json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--workload", choices=WORKLOADS, required=True)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--prefix", default="raw-", help="name prefix for fresh names")
    parser.add_argument("--grant", help="release: the grant of the prefilled leases")
    arguments = parser.parse_args()
    if arguments.workload == "release" and arguments.grant is None:
        parser.error("release needs --grant")
    print(
        uvloop.run(
            measure(
                arguments.url,
                arguments.workload,
                arguments.connections,
                arguments.seconds,
                arguments.prefix,
                arguments.grant,
            )
        )
    )


if __name__ == "__main__":
    main()
