"""The grown-database scenario (issue 29): the service on an empty database and on one grown to a
year of use, side by side in one run.

    .venv/bin/python bench/grown.py [--scale 0.1] [--database-url URL]   # alone
    .venv/bin/python bench/run.py [--grown-scale 0.1]                     # part of the run

Three databases on the benchmark's PostgreSQL, all migrated: one empty, one bulk-loaded with SQL
(`tests.support.grown`: 1M lease names of which 20k held, 5M lease events, 1k jobs with 1M
windows, 2M job events, 10k resolved alerts; `--scale` multiplies every count), one "young" with
the same jobs and held leases but no history (what history alone costs). Each is served by
its own `tenure serve --workers 2` with the monitor off (its pass is timed apart) and /metrics
uncached (each scrape reads the database, as one does every `TENURE_METRICS_CACHE_SECONDS`).
Measured in turns, the sides rotating in each round: acquire, renew and verify through wrk
(or loadgen.py), the read endpoints from one keep-alive connection, and monitor passes run in
this process by the service's own `Monitor` on each database.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
import runners
from database import bench_database, prefill, side_databases
from targets import format_ms, format_rate
from tests.support import lifespan
from tests.support.grown import YEAR, Growth, grow
from tests.support.processes import TENURE, Server, free_port, running, tenure_command
from workloads import RENEW_POOL, Measurement, median_of

from tenure_server.db.migrate import migrate
from tenure_server.server.app import create_app
from tenure_server.server.logs import JsonFormatter
from tenure_server.server.settings import Settings

# young: the grown database's jobs and held leases without their history, so that grown ÷ young
# is what history alone costs (grown ÷ empty also counts serving 1,000 jobs instead of none).
SIDES = ("empty", "young", "grown")
OPERATIONS = ("acquire", "renew", "verify")
READS = ("/v1/overview", "/ui", "/v1/jobs?limit=100", "/metrics")
MONITOR_ROUND = "monitor pass"
# The targets: reads and a monitor pass within 1.5x of the empty database, acquire's
# rate within 10% of it.
READ_BOUND, ACQUIRE_FLOOR = 1.5, 0.9
QUICK_SCALE = 0.02


@dataclass
class GrownResults:
    growth: Growth
    connections: int
    load_seconds: float = 0.0
    operations: dict[tuple[str, str], list[Measurement]] = field(default_factory=dict)
    # (read path or MONITOR_ROUND, side) -> seconds of each request or pass
    latencies: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def median_ms(self, what: str, side: str) -> float | None:
        found = self.latencies.get((what, side))
        return statistics.median(found) * 1000 if found else None


def _rotated(round_: int) -> tuple[str, ...]:
    turn = round_ % len(SIDES)
    return SIDES[turn:] + SIDES[:turn]


@contextmanager
def _databases(bench_url: str) -> Iterator[dict[str, str]]:
    """A database per side, next to the benchmark's own, migrated; dropped afterwards."""
    with side_databases(bench_url, "grown", SIDES) as urls:
        for url in urls.values():
            asyncio.run(migrate(url))
        yield urls


@contextmanager
def uncached_services(
    urls: Mapping[str, str], commands: Mapping[str, Path] | None = None
) -> Iterator[dict[str, Server]]:
    """A `tenure serve --workers 2` per side (its `commands` entry, or this checkout's), the
    monitor off and /metrics uncached, so each read measures what it costs."""
    with ExitStack() as stack:
        servers = {}
        for side, url in urls.items():
            port = free_port()
            env = dict(
                os.environ,
                TENURE_DATABASE_URL=url,
                TENURE_MONITOR_ENABLED="false",
                TENURE_METRICS_CACHE_SECONDS="0",
            )
            tenure = commands[side] if commands else TENURE
            command = tenure_command(port, "--workers", "2", tenure=tenure)
            servers[side] = stack.enter_context(
                running(command, port, env=env, output=subprocess.DEVNULL)
            )
        yield servers


def _get(connection: http.client.HTTPConnection, path: str) -> float:
    started = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}")
    return elapsed


def _reads(servers: dict[str, Server], results: GrownResults, rounds: int, each: int) -> None:
    """`each` GETs of every read path in a row, per side and round, on a connection opened for
    them (the server closes one idle for 5 s); one unmeasured round first: statements
    prepared, caches warm."""
    for round_ in range(-1, rounds):
        for side in _rotated(round_):
            connection = http.client.HTTPConnection("127.0.0.1", servers[side].port, timeout=60)
            connection.connect()
            try:
                for path in READS:
                    taken = [_get(connection, path) for _ in range(each)]
                    if round_ >= 0:
                        results.latencies.setdefault((path, side), []).extend(taken)
            finally:
                connection.close()


def _operations(
    servers: dict[str, Server], results: GrownResults, rounds: int, seconds: int
) -> None:
    c = results.connections
    for side, server in servers.items():  # unmeasured: pools grown, statements prepared
        runners.http(server.url, "acquire", c, 1, f"gw{side[0]}-", seed=1)
    for workload in OPERATIONS:
        for round_ in range(rounds):
            for side in _rotated(round_):
                prefix = f"g{side[0]}{workload[0]}{round_}-"
                measured = runners.http(
                    servers[side].url, workload, c, seconds, prefix, seed=round_
                )
                results.operations.setdefault((workload, side), []).append(measured)


@contextmanager
def _logs_discarded() -> Iterator[None]:
    """The in-process monitors log as `tenure serve` does (JSON at info), to nowhere, as the
    servers' output goes: the pass pays for its log lines and the report is not buried in them."""
    logger = logging.getLogger("tenure")
    with open(os.devnull, "w") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(JsonFormatter())
        logger.addHandler(handler)
        level, propagate = logger.level, logger.propagate
        logger.setLevel(logging.INFO)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def monitor_settings(url: str) -> Settings:
    """An in-process app on `url` whose monitor makes only the passes it is asked for: its
    loop's first pass would wait the interval (30 min)."""
    return Settings(
        database_url=url,
        pool_min_size=1,
        pool_max_size=4,
        monitor_interval_seconds=1800,
        monitor_lease_ttl_seconds=3600,
    )


async def _monitor_passes(urls: dict[str, str], results: GrownResults, rounds: int) -> None:
    """Passes of the service's own monitor, one app per database in this process."""
    async with AsyncExitStack() as stack:
        stack.enter_context(_logs_discarded())
        monitors = {}
        for side, url in urls.items():
            app = create_app(monitor_settings(url))
            served = await stack.enter_async_context(lifespan.running(app))
            monitors[side] = served.monitor
        for monitor in monitors.values():  # unmeasured: the lease taken, alerts due opened
            await monitor.run_pass()
        for round_ in range(rounds):
            for side in _rotated(round_):
                started = time.perf_counter()
                if not await monitors[side].run_pass():
                    raise RuntimeError(f"the {side} monitor did not lead its pass")
                taken = time.perf_counter() - started
                results.latencies.setdefault((MONITOR_ROUND, side), []).append(taken)


def scenario(
    bench_url: str,
    growth: Growth,
    *,
    connections: int,
    rounds: int,
    seconds: int,
    log: Callable[[str], None],
) -> GrownResults:
    """Measure both sides; `bench_url`: a database of the server to create them on."""
    results = GrownResults(growth, connections)
    with _databases(bench_url) as urls:
        log(f"grown database: loading {growth.describe()} …")
        started = time.monotonic()
        asyncio.run(grow(urls["grown"], growth))
        results.load_seconds = time.monotonic() - started
        log(f"  loaded in {results.load_seconds:.0f} s; young: {growth.young().describe()}")
        asyncio.run(grow(urls["young"], growth.young()))
        for url in urls.values():
            asyncio.run(prefill(url, "rn-", 1, RENEW_POOL))
            asyncio.run(prefill(url, "fl-", 1, 1))
        with uncached_services(urls) as servers:
            log("grown database: acquire, renew, verify, empty and grown in turns …")
            _operations(servers, results, rounds, seconds)
            log("grown database: read endpoints …")
            _reads(servers, results, rounds, 10)
        log("grown database: monitor passes …")
        asyncio.run(_monitor_passes(urls, results, rounds * 3))
    return results


def _verdict(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def _times(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"


def _ratio(grown: float, base: float) -> float | None:
    return grown / base if base else None


def render(r: GrownResults) -> list[str]:
    lines = [
        f"Grown: {r.growth.describe()}; loaded in {r.load_seconds:.0f} s (SQL, then VACUUM "
        "ANALYZE). Young: the same jobs and held leases without history "
        f"({r.growth.young().describe()}). Each side served by its own `tenure serve --workers "
        "2` on the same PostgreSQL (monitor off, /metrics uncached), in turns; rates through "
        f"{'wrk' if runners.WRK else 'loadgen.py'} at {r.connections} connections, reads the "
        "median of sequential GETs on one keep-alive connection, the monitor pass timed in the "
        "harness's process. The issue's target is against the empty database; grown ÷ young "
        "is what history alone adds (empty serves no jobs at all).",
        "",
        "| measure | empty | young | grown | grown ÷ empty | target | verdict | grown ÷ young "
        "| verdict |",
        "|---|--:|--:|--:|--:|---|---|--:|---|",
    ]
    for workload in OPERATIONS:
        if not all((workload, side) in r.operations for side in SIDES):
            continue
        empty, young, grown = (median_of(r.operations[workload, side]) for side in SIDES)
        ratios = _ratio(grown.rate, empty.rate), _ratio(grown.rate, young.rate)
        floor = ACQUIRE_FLOOR if workload == "acquire" else None
        verdicts = [
            "—" if ratio is None or floor is None else _verdict(ratio >= floor) for ratio in ratios
        ]
        cells = [
            f"{format_rate(m.rate)}/s (p50 {format_ms(m.p50_ms)} ms)" for m in (empty, young, grown)
        ]
        lines.append(
            f"| {workload}, ops/s | {' | '.join(cells)} | {_times(ratios[0])} | "
            f"{'—' if floor is None else f'≥ {floor:.2f}×'} | {verdicts[0]} | "
            f"{_times(ratios[1])} | {verdicts[1]} |"
        )
    for what in (*READS, MONITOR_ROUND):
        found = [r.median_ms(what, side) for side in SIDES]
        if None in found:
            continue
        empty_ms, young_ms, grown_ms = (ms or 0.0 for ms in found)
        ratios = _ratio(grown_ms, empty_ms), _ratio(grown_ms, young_ms)
        verdicts = ["—" if ratio is None else _verdict(ratio <= READ_BOUND) for ratio in ratios]
        label = f"GET {what}" if what.startswith("/") else what
        lines.append(
            f"| {label}, median ms | {format_ms(empty_ms)} | {format_ms(young_ms)} | "
            f"{format_ms(grown_ms)} | {_times(ratios[0])} | ≤ {READ_BOUND:g}× | {verdicts[0]} | "
            f"{_times(ratios[1])} | {verdicts[1]} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="of a year of use (default 1)")
    parser.add_argument("--database-url", help="PostgreSQL server to use (default: embedded)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=2)
    a = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with bench_database(a.database_url) as database:
        results = scenario(
            database.url,
            YEAR.scaled(a.scale),
            connections=a.connections,
            rounds=a.rounds,
            seconds=a.seconds,
            log=log,
        )
    print("\n".join(render(results)))


if __name__ == "__main__":
    main()
