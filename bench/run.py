"""The side-by-side benchmark of issue 9, in one command:

    .venv/bin/python bench/run.py [--quick] [--database-url URL] [--out FILE]

Starts PostgreSQL (embedded, unless a URL is given: then a throw-away database is made on it),
the Tenure service (`tenure serve --workers 2`) and, in the same run, the baselines: the naive
FastAPI endpoint (baseline_app.py, 2 uvicorn workers, uvloop + httptools), the raw statements
from one asyncpg process (raw_asyncpg.py) and `pgbench -M prepared` with the same statements.
Load comes from separate processes: wrk (one- and two-request operations) and loadgen.py (batch
renew, idle cost). Then the hand-off, takeover and idle measurements, a py-spy profile of the
acquire path, and the grown-database scenario (grown.py: the service on an empty database
against one grown to a year of use). Prints the report and rewrites the "Latest results"
section of bench/README.md. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
import grown
import httpx
import runners
import scenarios
import sdk_cycles
from database import Database, bench_database, postmaster_pid, prefill, server_facts, settle
from grown import QUICK_SCALE
from matrix import Matrix, Systems
from profiling import PY_SPY, profile_acquire
from report import render, write_readme
from results import WORKLOADS, Results
from tests.support.grown import YEAR
from tests.support.processes import BIN, Server, free_port, running, tenure_command
from workloads import (
    BATCH_CONNECTIONS,
    BATCH_PREFIX,
    BATCH_SIZE,
    QUERIES_ENV,
    RENEW_POOL,
    WINDOW_LEASES,
    check_statements,
    queries,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Mode:
    runs: int
    seconds: int
    connections: tuple[int, ...]


FULL = Mode(runs=3, seconds=2, connections=(1, 4, 16, 64))
QUICK = Mode(runs=1, seconds=1, connections=(1, 16))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run of a minute or two")
    parser.add_argument("--database-url", help="PostgreSQL server to use (default: embedded)")
    parser.add_argument("--runs", type=int, help="runs per figure (full 3, quick 1)")
    parser.add_argument("--seconds", type=int, help="seconds per run (full 2, quick 1)")
    parser.add_argument("--connections", type=int, nargs="+", help="default 1 4 16 64")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=[*WORKLOADS, sdk_cycles.SDK_WORKLOAD],
        help="default: all",
    )
    parser.add_argument("--skip-scenarios", action="store_true", help="no hand-off/takeover/idle")
    parser.add_argument("--skip-profile", action="store_true", help="no py-spy profile")
    parser.add_argument("--idle-leases", type=int, help="full 10000, quick 1000")
    parser.add_argument("--idle-seconds", type=int, help="full 30, quick 15 (each way)")
    parser.add_argument(
        "--grown-scale",
        type=float,
        help="size of the grown database, a fraction of a year of use (full 1, quick 0.02; "
        "0: no grown-database scenario)",
    )
    parser.add_argument(
        "--tenure-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of the Tenure service, e.g. TENURE_LOG_LEVEL=warning",
    )
    parser.add_argument("--service-log", type=Path, help="keep the servers' output in this file")
    parser.add_argument("--readme", type=Path, default=HERE / "README.md")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    return parser.parse_args()


def _commit() -> str:
    def git(*arguments: str) -> str:
        done = subprocess.run(
            ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--", "service", "bench")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")


def _machine(facts: dict[str, str], embedded: bool) -> list[str]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.machine(),
    )
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    wrk = (
        "wrk (one- and two-request operations) and loadgen.py (batch renew, batch verify, "
        "idle cost)"
    )
    if not runners.WRK:
        wrk = "loadgen.py only"
    where = "embedded (pgserver, unix socket)" if embedded else "the given URL"
    return [
        f"Machine: {os.cpu_count()} cores, {model}; load average at start {load}.",
        f"Python {platform.python_version()}; load from {wrk}.",
        f"PostgreSQL {facts['version']}, {where}; synchronous_commit={facts['synchronous_commit']},"
        f" fsync={facts['fsync']}, shared_buffers={facts['shared_buffers']}.",
    ]


def _overrides(arguments: argparse.Namespace) -> dict[str, str]:
    """The Tenure services' settings given by --tenure-env."""
    return dict(item.split("=", 1) for item in arguments.tenure_env)


@contextmanager
def servers(database: Database, arguments: argparse.Namespace) -> Iterator[Systems]:
    """The Tenure service and the naive app, both with 2 workers, on free loopback ports."""
    overrides = _overrides(arguments)
    with ExitStack() as stack:
        # Request logs cost the servers what they cost in production, not the disk: discarded.
        output = (
            stack.enter_context(arguments.service_log.open("ab"))
            if arguments.service_log
            else subprocess.DEVNULL
        )
        port = free_port()
        # The caller's own TENURE_* settings apply too (the tests' services get none).
        env = dict(os.environ, TENURE_DATABASE_URL=database.url, **overrides)
        command = tenure_command(port, "--workers", "2")
        tenure = stack.enter_context(running(command, port, env=env, output=output))
        port = free_port()
        naive_command = [
            str(BIN / "uvicorn"),
            "baseline_app:create_app",
            "--factory",
            f"--app-dir={HERE}",
            "--host=127.0.0.1",
            f"--port={port}",
            "--workers=2",
            "--loop=uvloop",
            "--http=httptools",
            "--no-access-log",
            "--log-level=warning",
        ]
        env = dict(os.environ, BENCH_DATABASE_URL=database.url)
        naive = stack.enter_context(running(naive_command, port, env=env, output=output))
        yield Systems(database, tenure, naive, asyncio.run(postmaster_pid(database.url)))


async def _prefill_fixed(url: str, connections: list[int]) -> None:
    """The held leases every run starts from: renewed, fenced against, claimed under."""
    await prefill(url, "rn-", 1, RENEW_POOL)
    await prefill(url, "fl-", 1, 1)
    await prefill(url, "cw-", 1, WINDOW_LEASES)
    await prefill(url, BATCH_PREFIX, max(BATCH_CONNECTIONS, *connections), BATCH_SIZE)


def _batch_renew_missing(tenure: Server) -> str | None:
    """Why batch renew cannot be measured, or None when the endpoint takes the harness's body."""
    body = {"holder": "bench", "ttl_seconds": 60, "leases": [{"name": "rn-0-0", "generation": 1}]}
    status = httpx.post(f"{tenure.url}/v1/leases/renew", json=body, timeout=10).status_code
    if status in (404, 405):
        return f"not implemented (POST /v1/leases/renew answers {status})"
    if status != 200:
        return f"POST /v1/leases/renew answers {status} to the harness's body (see README)"
    return None


def _warm_up(systems: Systems, seconds: int) -> None:
    """Fill both services' pools and caches before anything is measured."""
    for server in (systems.tenure, systems.naive):
        runners.http(server.url, "acquire", 64, seconds, "warm-", seed=1)


def _scenarios(systems: Systems, results: Results, quick: bool, a: argparse.Namespace) -> None:
    log("settling the database (VACUUM ANALYZE, CHECKPOINT) …")
    asyncio.run(settle(systems.database.url))
    log("hand-off latency …")
    env = dict(os.environ, TENURE_DATABASE_URL=systems.database.url, **_overrides(a))
    # A p99 of 500 is its five worst rounds' edge, not one stall's.
    rounds = 30 if quick else 500
    results.handoff, results.handoff_across = scenarios.hand_offs(env, rounds)
    results.handoff_floor = scenarios.database_hand_offs(systems.database.url, rounds)
    log("takeover after SIGKILL …")
    results.takeover = scenarios.takeovers(systems.tenure.url, 1 if quick else 3, 2.0)
    leases = a.idle_leases or (1_000 if quick else 10_000)
    seconds = a.idle_seconds or (15 if quick else 30)
    results.floor_core_percent = scenarios.service_floor(systems.tenure, 5 if quick else 10)
    batches = [1] if "batch_renew" in results.missing else [1, BATCH_SIZE]
    for batch in batches:
        log(f"idle cost: {leases} leases renewed every 30 s, batch {batch}, {seconds} s …")
        results.idle.append(
            scenarios.idle_cost(
                systems.database.url, systems.tenure, systems.postmaster, leases, seconds, batch
            )
        )


def _profiles(systems: Systems, results: Results, quick: bool, folder: Path) -> None:
    if not PY_SPY.exists():
        log("py-spy is not installed: no profile (.venv/bin/pip install py-spy)")
        return
    for system, server, seconds, svg in (
        ("tenure", systems.tenure, 5 if quick else 20, HERE / "profile-acquire.svg"),
        ("naive", systems.naive, 5 if quick else 10, None),
    ):
        log(f"profiling {system} under acquire load ({seconds} s) …")
        results.profiles.append(
            profile_acquire(system, server.url, server.pid, seconds, folder, svg)
        )


def _snapshot_statements(folder: Path) -> None:
    """Every process of the run uses the statements as they are now (see workloads.queries)."""
    statements = dict(queries())
    check_statements(statements)
    snapshot = folder / "queries.json"
    snapshot.write_text(json.dumps(statements))
    os.environ[QUERIES_ENV] = str(snapshot)


def _measure(a: argparse.Namespace, results: Results, scratch: Path) -> None:
    with bench_database(a.database_url) as database:
        results.machine = _machine(asyncio.run(server_facts(database.url)), a.database_url is None)
        log("starting the Tenure service and the naive app …")
        with servers(database, a) as systems:
            asyncio.run(_prefill_fixed(database.url, results.connections))
            missing = _batch_renew_missing(systems.tenure)
            if missing:
                results.missing["batch_renew"] = missing
            _warm_up(systems, 1 if a.quick else 2)
            chosen = a.workloads or [*WORKLOADS, sdk_cycles.SDK_WORKLOAD]
            Matrix(systems, results, log).run([w for w in chosen if w in WORKLOADS])
            if sdk_cycles.SDK_WORKLOAD in chosen:
                log("SDK cycles from one Python process, and redis.asyncio …")
                results.sdk = sdk_cycles.measure_for(
                    systems.tenure.url, a.quick, results.runs, results.seconds, log
                )
            if not a.skip_scenarios:
                _scenarios(systems, results, a.quick, a)
            if not a.skip_profile:
                _profiles(systems, results, a.quick, scratch)
        _grown(database, results, a)


def _grown(database: Database, results: Results, a: argparse.Namespace) -> None:
    """The grown-database scenario (bench/grown.py), once the other servers have stopped."""
    scale = a.grown_scale if a.grown_scale is not None else (QUICK_SCALE if a.quick else 1.0)
    if scale > 0:
        c = 16 if 16 in results.connections else max(results.connections)
        results.grown = grown.scenario(
            database.url,
            YEAR.scaled(scale),
            connections=c,
            rounds=results.runs,
            seconds=math.ceil(results.seconds),
            log=log,
        )


def main() -> None:
    a = _arguments()
    mode = QUICK if a.quick else FULL
    began = time.monotonic()
    results = Results(
        command=shlex.join([".venv/bin/python", "bench/run.py", *sys.argv[1:]]),
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        commit=_commit(),
        machine=[],
        connections=a.connections or list(mode.connections),
        runs=a.runs or mode.runs,
        seconds=a.seconds or mode.seconds,
    )
    with tempfile.TemporaryDirectory(prefix="tnb") as scratch:
        _snapshot_statements(Path(scratch))
        _measure(a, results, Path(scratch))
    results.elapsed_seconds = time.monotonic() - began
    section = render(results)
    write_readme(a.readme, section)
    if a.out:
        a.out.write_text(section)
    print(section)


if __name__ == "__main__":
    main()
