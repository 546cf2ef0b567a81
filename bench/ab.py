"""Two builds of the service timed in turns (A/B): this checkout's against another's, each
`tenure serve --workers 2` from its own checkout's .venv on its own database of one PostgreSQL.

    TMPDIR=/dev/shm .venv/bin/python bench/ab.py --before ../before [--rounds 20] [--seconds 2]

`--before` is a checkout of the code before a change with its own .venv (e.g. `git worktree
add --detach ../before <commit> && (cd ../before && scripts/bootstrap)`). In each round every
workload runs once on each side, the side that goes first alternating, so the machine's drift
falls on both; each round's after ÷ before rate is one ratio, and the median, min and max of
the ratios are reported per workload, with each side's median CPU per operation (its service's
process tree, from /proc: on a shared machine the steadier figure; each round's rates and CPU go
to stderr). With TMPDIR on a
memory file system the embedded PostgreSQL's commits wait for no disk: what is left to compare is
the two builds' CPU, not the disk's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
import runners
from cpu import CpuMeter
from database import bench_database, prefill, side_databases
from tests.support.processes import Server, free_port, running, tenure_command
from workloads import RENEW_POOL, WINDOW_LEASES

SIDES = ("before", "after")
WORKLOADS = ("acquire", "renew", "claim_complete", "verify", "cycle")
DEFAULT_WORKLOADS = ("acquire", "renew", "claim_complete", "verify")


@contextmanager
def _services(bench_url: str, commands: dict[str, Path]) -> Iterator[dict[str, Server]]:
    """One database and one service per side; each service migrates its own database."""
    with side_databases(bench_url, "ab", SIDES) as urls, ExitStack() as stack:
        servers = {}
        for side, url in urls.items():
            port = free_port()
            env = dict(os.environ, TENURE_DATABASE_URL=url)
            command = tenure_command(port, "--workers", "2", tenure=commands[side])
            servers[side] = stack.enter_context(
                running(command, port, env=env, output=subprocess.DEVNULL)
            )
            asyncio.run(_held(url))
        yield servers


async def _held(url: str) -> None:
    """The held leases renew, verify and claim+complete work on (as bench/run.py's)."""
    await prefill(url, "rn-", 1, RENEW_POOL)
    await prefill(url, "fl-", 1, 1)
    await prefill(url, "cw-", 1, WINDOW_LEASES)


def _rates(
    servers: dict[str, Server], workload: str, rounds: int, seconds: int, connections: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each side's rate and service CPU µs per operation, round by round."""
    for side, server in servers.items():  # unmeasured: pools grown, statements prepared
        runners.http(server.url, workload, connections, 1, f"w{side[0]}{workload[:3]}-", seed=1)
    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_ in range(rounds):
        order = SIDES if round_ % 2 == 0 else SIDES[::-1]
        for side in order:
            prefix = f"{side[0]}{workload[:3]}{round_}-"
            meter = CpuMeter(servers[side].pid)
            meter.start()
            measured = runners.http(
                servers[side].url, workload, connections, seconds, prefix, seed=round_
            )
            if measured.errors:
                raise RuntimeError(f"{side} {workload}: {measured.errors} errors")
            rates[side].append(measured.rate)
            cpu[side].append(meter.elapsed() / max(measured.ops, 1) * 1e6)
    return rates, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout with its .venv")
    parser.add_argument("--database-url", help="PostgreSQL server to use (default: embedded)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--workloads", nargs="+", choices=WORKLOADS, default=list(DEFAULT_WORKLOADS)
    )
    args = parser.parse_args()
    commands = {
        "before": args.before.resolve() / ".venv/bin/tenure",
        "after": Path(__file__).resolve().parents[1] / ".venv/bin/tenure",
    }
    print(
        f"after/before at {args.connections} connections, {args.rounds} rounds of {args.seconds} s"
    )
    print(
        "| workload | before ops/s | after ops/s | after/before median | min | max "
        "| before CPU µs/op | after CPU µs/op |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with (
        bench_database(args.database_url) as database,
        _services(database.url, commands) as servers,
    ):
        for workload in args.workloads:
            rates, cpu = _rates(servers, workload, args.rounds, args.seconds, args.connections)
            ratios = [a / b for a, b in zip(rates["after"], rates["before"], strict=True)]
            for side in SIDES:  # every round's figure, for the spread
                figures = [round(rate) for rate in rates[side]]
                micros = [round(each) for each in cpu[side]]
                print(f"{workload} {side}: {figures}, CPU µs/op {micros}", file=sys.stderr)
            print(
                f"| {workload} | {statistics.median(rates['before']):,.0f} "
                f"| {statistics.median(rates['after']):,.0f} | {statistics.median(ratios):.3f} "
                f"| {min(ratios):.3f} | {max(ratios):.3f} "
                f"| {statistics.median(cpu['before']):.0f} "
                f"| {statistics.median(cpu['after']):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
