"""What one /metrics scrape costs, this checkout against another, on an empty database and on a
"young" one (the grown scenario's 1,000 jobs and 20,000 held leases, no history).

    TMPDIR=/dev/shm .venv/bin/python bench/metrics_scrape.py --before ../before [--rounds 5]

Four `tenure serve --workers 2` (each checkout on each database; monitor off, metrics cache off so
that each scrape reads the database). Each first serves `--leases` acquires of distinct names
over eight connections, so that both workers hold counters per lease name (about nine series a
name, as after bench/grown.py's acquire runs). Then, per round, `--scrapes` GETs of /metrics on
one keep-alive connection per service, the checkouts alternating which goes first; the median
time of a scrape and the service's CPU per scrape (its process tree, from /proc) are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from cpu import CpuMeter
from database import bench_database, side_databases
from grown import uncached_services
from tests.support.grown import Growth, grow
from tests.support.processes import Server

from tenure_server.db.migrate import migrate

BUILDS = ("before", "after")
DATABASES = ("empty", "young")
CLIENTS = 8


@contextmanager
def _services(bench_url: str, commands: dict[str, Path]) -> Iterator[dict[str, Server]]:
    sides = [f"{build}_{database}" for database in DATABASES for build in BUILDS]
    with side_databases(bench_url, "metrics", sides) as urls, ExitStack() as stack:
        for side, url in urls.items():
            asyncio.run(migrate(url))
            if side.endswith("young"):
                asyncio.run(grow(url, Growth().young()))
        builds = {side: commands[side.split("_")[0]] for side in urls}
        yield stack.enter_context(uncached_services(urls, builds))


def _acquire_names(url: str, leases: int) -> None:
    """`leases` distinct names acquired over CLIENTS connections (spread over the workers)."""

    def acquire(client: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            for index in range(client, leases, CLIENTS):
                answer = http.post(
                    f"/v1/leases/mx-{index}/acquire", json={"holder": "h", "ttl_seconds": 600}
                )
                answer.raise_for_status()

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(acquire, range(CLIENTS)))


def _scrapes(server: Server, count: int) -> tuple[list[float], float]:
    """The seconds of each of `count` scrapes, and the service's CPU seconds per scrape."""
    meter = CpuMeter(server.pid)
    taken = []
    with httpx.Client(base_url=server.url, timeout=60) as http:
        http.get("/metrics").raise_for_status()  # connection open, statements prepared
        meter.start()
        for _ in range(count):
            started = time.perf_counter()
            http.get("/metrics").raise_for_status()
            taken.append(time.perf_counter() - started)
        return taken, meter.elapsed() / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout with its .venv")
    parser.add_argument("--database-url", help="PostgreSQL server to use (default: embedded)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--leases", type=int, default=1000)
    args = parser.parse_args()
    commands = {
        "before": args.before.resolve() / ".venv/bin/tenure",
        "after": Path(__file__).resolve().parents[1] / ".venv/bin/tenure",
    }
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with (
        bench_database(args.database_url) as database,
        _services(database.url, commands) as servers,
    ):
        for server in servers.values():
            _acquire_names(server.url, args.leases)
        for round_ in range(args.rounds):
            builds = BUILDS if round_ % 2 == 0 else BUILDS[::-1]
            for side in (f"{build}_{data}" for data in DATABASES for build in builds):
                taken, per_scrape = _scrapes(servers[side], args.scrapes)
                times.setdefault(side, []).extend(taken)
                cpu.setdefault(side, []).append(per_scrape)
                print(
                    f"round {round_} {side}: {statistics.median(taken) * 1000:.1f} ms, "
                    f"CPU {per_scrape * 1000:.1f} ms",
                    file=sys.stderr,
                )
    print(
        f"/metrics, {args.leases} lease names acquired first, "
        f"{args.rounds} rounds of {args.scrapes} scrapes"
    )
    print("| database | before ms | after ms | before CPU ms | after CPU ms |")
    print("|---|---:|---:|---:|---:|")
    for data in DATABASES:
        before, after = f"before_{data}", f"after_{data}"
        print(
            f"| {data} | {statistics.median(times[before]) * 1000:.1f} "
            f"| {statistics.median(times[after]) * 1000:.1f} "
            f"| {statistics.median(cpu[before]) * 1000:.1f} "
            f"| {statistics.median(cpu[after]) * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
