"""The CPU and time of the read endpoints and of a monitor pass on one database, in this process:
the app run in-process (tests/support/lifespan.py) and called through httpx's ASGI transport, so
that `time.process_time()` around a request counts the service's Python work (and the client's,
alike for every run) but none of PostgreSQL's. PostgreSQL's is counted apart ("database CPU"):
the CPU of the backends serving the database's connections, from /proc, when the server runs on
this machine and nothing else uses that database meanwhile. On a machine shared with other work,
CPU per request resolves changes that wall-clock latencies do not; compare two checkouts by
running each in turn against the same database.

    .venv/bin/python bench/read_cost.py postgresql://…/db [--requests 9] [--profile /v1/overview]

The database is one bench/grown.py builds (tests.support.grown), kept between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import asyncpg
import httpx

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from cpu import CpuMeter
from grown import monitor_settings
from tests.support import lifespan

from tenure_server.server.app import create_app

READS = ("/v1/overview", "/ui", "/v1/jobs?limit=100", "/metrics")
MONITOR = "monitor pass"


async def measure(url: str, requests: int, profiled: str | None) -> None:
    # /metrics uncached, as in bench/grown.py: each scrape reads the database.
    settings = monitor_settings(url).model_copy(update={"metrics_cache_seconds": 0})
    async with lifespan.running(create_app(settings)) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

            async def read(path: str) -> None:
                (await client.get(path)).raise_for_status()

            async def monitor_pass() -> None:
                if not await served.monitor.run_pass():
                    raise RuntimeError("the monitor did not lead its pass")

            calls: dict[str, Callable[[], Awaitable[None]]] = {
                path: partial(read, path) for path in READS
            }
            calls[MONITOR] = monitor_pass
            for call in calls.values():  # unmeasured: statements prepared, alerts due opened
                await call()
            database = CpuMeter(*local_backends(await backends(url)))
            for what, call in calls.items():
                profile = cProfile.Profile() if what == profiled else None
                wall, cpu = [], []
                database.start()
                for _ in range(requests):
                    started, used = time.perf_counter(), time.process_time()
                    if profile is not None:
                        profile.enable()
                    await call()
                    if profile is not None:
                        profile.disable()
                    wall.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - used)
                # Per call on average: /proc counts in clock ticks (10 ms), too coarse for one.
                in_database = f", database CPU {database.elapsed() / requests * 1000:.1f} ms"
                print(
                    f"{what}: median {statistics.median(wall) * 1000:.1f} ms, "
                    f"CPU {statistics.median(cpu) * 1000:.1f} ms"
                    f"{in_database if database.active else ''}",
                    flush=True,
                )
                if profile is not None:
                    pstats.Stats(profile).sort_stats("tottime").print_stats(30)


async def backends(url: str) -> list[int]:
    """The process ids of the backends connected to the database of `url` (the app's pool)."""
    connection = await asyncpg.connect(url)
    try:
        return [
            row["pid"]
            for row in await connection.fetch(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ]
    finally:
        await connection.close()


def local_backends(pids: list[int]) -> list[int]:
    """Those of `pids` that are PostgreSQL processes of this machine: none when the server
    runs elsewhere."""
    local = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "postgres":
                local.append(pid)
        except OSError:
            continue
    return local


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("database_url")
    parser.add_argument("--requests", type=int, default=9, help="of each read (default 9)")
    parser.add_argument("--profile", choices=(*READS, MONITOR), help="cProfile this one")
    a = parser.parse_args()
    asyncio.run(measure(a.database_url, a.requests, a.profile))


if __name__ == "__main__":
    main()
