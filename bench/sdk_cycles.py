"""What one Python process drives through the SDK, and what the SDK itself costs it: acquire→
release cycles on fresh names from one process on uvloop, `AsyncTenure` with 1/16/64 tasks and
`Tenure` with as many threads; beside them, in the same run, each client's transport alone
doing the same two requests without the SDK (httpx over the SDK's transport, and that transport
bare: aiohttp for `AsyncTenure`, pyreqwest for `Tenure`), and
redis.asyncio doing the same cycle (SET NX PX, then a Lua compare-and-delete) against a
`redis-server` started here with AOF `appendfsync always` and again with `everysec` (issue 29).

    .venv/bin/python bench/sdk_cycles.py [--seconds 2] [--runs 3] [--tasks 1 16 64]

Alone, it starts its own `tenure serve --workers 2` (embedded PostgreSQL) and prints the table;
bench/run.py runs it against its service as the `sdk` workload. Each figure is one child
process (sdk_clients.py) that warms up, then counts the cycles it completes in the window and
the CPU time the whole process (all its threads) spent meanwhile: the client's own CPU per
request is that CPU over twice the cycles.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The bench's own modules, and the repository's root for `tests.support`.
sys.path[:0] = [str(HERE), str(HERE.parent)]
from redis_server import REDIS_SERVER, redis_server
from sdk_clients import CLIENTS, TRANSPORTS, Figure
from tests.support.processes import tenure_service

SDK_WORKLOAD = "sdk"
FULL_TASKS, QUICK_TASKS = (1, 16, 64), (1, 16)
TARGET_TASKS, TARGET_RATE, TARGET_OVERHEAD_US = 16, 1_000, 50.0


# The parent: every client × tasks × run, each in a child process. -----------------------------


def _child(client: str, url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    command = [sys.executable, str(HERE / "sdk_clients.py"), client, url]
    command += ["--tasks", str(tasks), "--seconds", str(seconds), "--prefix", prefix]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-400:])
    return Figure(**json.loads(done.stdout.splitlines()[-1]))


def available(clients: list[str]) -> tuple[list[str], dict[str, str]]:
    """The clients this machine can run, and why the others cannot."""
    missing: dict[str, str] = {}
    for client in clients:
        if client.startswith("redis") and not Path(REDIS_SERVER).exists():
            missing[client] = f"no {REDIS_SERVER} (apt-get install -y redis-server)"
        modules = {
            "httpx": "httpx_aiohttp",
            "aiohttp": "aiohttp",
            "httpx-sync": "pyreqwest",
            "reqwest": "pyreqwest",
        }.get(client, "redis")
        if client in ("httpx", "aiohttp", "httpx-sync", "reqwest") or client.startswith("redis"):
            found = subprocess.run([sys.executable, "-c", f"import {modules}"], check=False)
            if found.returncode != 0:
                missing[client] = f"{modules} is not installed (bench/README.md)"
    return [c for c in clients if c not in missing], missing


@dataclass
class SdkRun:
    """Every figure of the workload, and the clients that could not run."""

    figures: dict[tuple[str, int], list[Figure]]
    missing: dict[str, str]
    failures: dict[tuple[str, int], str]

    def median(self, client: str, tasks: int) -> Figure | None:
        runs = self.figures.get((client, tasks))
        if not runs:
            return None
        return sorted(runs, key=lambda f: f.rate)[len(runs) // 2]

    @property
    def tasks(self) -> list[int]:
        return sorted({tasks for _, tasks in (*self.figures, *self.failures)})


def measure(
    tenure_url: str,
    tasks: tuple[int, ...] = FULL_TASKS,
    runs: int = 3,
    seconds: float = 2.0,
    clients: list[str] | None = None,
    log: Callable[[str], None] = print,
) -> SdkRun:
    """Each client at each task count, `runs` times, the clients taking turns in a rotating
    order within a run (as bench/matrix.py does), redis-server started for its figures."""
    present, missing = available(clients or list(CLIENTS))
    result = SdkRun({}, missing, {})
    with ExitStack() as stack:
        urls = {c: tenure_url for c in present if not c.startswith("redis")}
        for client in (c for c in present if c.startswith("redis")):
            fsync = client.removeprefix("redis-")
            urls[client] = stack.enter_context(redis_server(fsync))
        for count in tasks:
            for run in range(runs):
                turn = run % len(present)
                for client in present[turn:] + present[:turn]:
                    _measure_one(result, client, urls[client], count, run, seconds, log)
    return result


def _measure_one(
    result: SdkRun,
    client: str,
    url: str,
    tasks: int,
    run: int,
    seconds: float,
    log: Callable[[str], None],
) -> None:
    key = (client, tasks)
    if key in result.failures:
        return
    prefix = f"sdk{client[:5]}{tasks}x{run}t{time.time_ns() % 10**9}-"
    try:
        figure = _child(client, url, tasks, seconds, prefix)
    except Exception as error:  # one failed figure must not lose the rest of the run
        result.failures[key] = f"{type(error).__name__}: {str(error)[-300:]}"
        log(f"  sdk {client:>14} {tasks:>3} tasks FAILED: {error}")
        return
    result.figures.setdefault(key, []).append(figure)
    log(
        f"  sdk {client:>14} {tasks:>3} tasks run {run}: {figure.rate:8,.0f} cycles/s  "
        f"{figure.cpu_us_per_request:7.0f} µs CPU/request  errors {figure.errors}"
    )


def measure_for(
    tenure_url: str, quick: bool, runs: int, seconds: float, log: Callable[[str], None]
) -> SdkRun:
    """The workload as bench/run.py runs it: its runs and seconds per figure, 1 and 16 tasks
    only when quick."""
    return measure(tenure_url, QUICK_TASKS if quick else FULL_TASKS, runs, seconds, log=log)


# The report. ----------------------------------------------------------------------------------


def overhead(run: SdkRun, tasks: int, sdk_client: str, baseline: str) -> float | None:
    """`sdk_client`'s CPU per request above `baseline`'s, µs, at `tasks`."""
    sdk, bare = run.median(sdk_client, tasks), run.median(baseline, tasks)
    if sdk is None or bare is None or not sdk.cycles or not bare.cycles:
        return None
    return sdk.cpu_us_per_request - bare.cpu_us_per_request


def table(run: SdkRun) -> list[str]:
    header = "| client | " + " | ".join(f"{t} tasks" for t in run.tasks) + " |"
    lines = [
        "Each cell: acquire→release cycles/s (the client process's own CPU per request, µs).",
        "",
        header,
        "|---|" + "--:|" * len(run.tasks),
    ]
    for client, description in CLIENTS.items():
        if client in run.missing:
            lines.append(f"| {description} | {run.missing[client]} |" + " |" * (len(run.tasks) - 1))
            continue
        cells = []
        for tasks in run.tasks:
            figure = run.median(client, tasks)
            if (client, tasks) in run.failures:
                cells.append("error")
            elif figure is None:
                cells.append("—")
            else:
                errors = f" ⚠ {figure.errors} errors" if figure.errors else ""
                cells.append(f"{figure.rate:,.0f}/s ({figure.cpu_us_per_request:,.0f} µs){errors}")
        if any(cell != "—" for cell in cells):
            lines.append(f"| {description} | " + " | ".join(cells) + " |")
    for sdk_client, baselines in TRANSPORTS.items():
        for baseline in baselines:
            above = [(t, overhead(run, t, sdk_client, baseline)) for t in run.tasks]
            shown = [f"{v:+.0f} µs at {t}" for t, v in above if v is not None]
            if shown:
                name = CLIENTS[sdk_client].split(" ")[0]
                lines += ["", f"{name}'s CPU per request above {CLIENTS[baseline]}: "]
                lines[-1] += ", ".join(shown) + "."
    for (client, tasks), error in run.failures.items():
        lines.append(f"- {client} / {tasks} tasks: {error}")
    return lines


def target_rate(run: SdkRun | None, sdk_client: str) -> tuple[str, bool | None]:
    figure = run.median(sdk_client, TARGET_TASKS) if run else None
    if figure is None:
        return "not measured", None
    return f"{figure.rate:,.0f} cycles/s", figure.rate >= TARGET_RATE and not figure.errors


def target_overhead(run: SdkRun | None, sdk_client: str) -> tuple[str, bool | None]:
    transport = TRANSPORTS[sdk_client][0]
    above = overhead(run, TARGET_TASKS, sdk_client, transport) if run else None
    if above is None:
        return "not measured", None
    return f"{above:+.0f} µs/request above {CLIENTS[transport]}", above <= TARGET_OVERHEAD_US


Judge = Callable[[SdkRun | None], tuple[str, bool | None]]


def _targets(sdk_client: str, name: str, unit: str) -> tuple[tuple[str, str, Judge], ...]:
    """Issue 29's two targets for one SDK client: both clients are held to them."""
    return (
        (
            f"{name} acquire→release cycles/s, one process, {TARGET_TASKS} {unit}",
            f"≥ {TARGET_RATE:,}",
            lambda run: target_rate(run, sdk_client),
        ),
        (
            f"{name}'s own CPU per request at {TARGET_TASKS} {unit}",
            f"≤ {TARGET_OVERHEAD_US:g} µs above its transport",
            lambda run: target_overhead(run, sdk_client),
        ),
    )


TARGETS = (
    *_targets("async", "SDK", "tasks"),
    *_targets("sync", "Sync SDK (`Tenure`)", "threads"),
)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, nargs="+", default=list(FULL_TASKS))
    parser.add_argument("--clients", nargs="+", choices=list(CLIENTS), help="default: all")
    parser.add_argument("--url", help="a running Tenure service (default: start one)")
    return parser.parse_args()


@contextmanager
def _served(options: argparse.Namespace) -> Iterator[str]:
    """The service's URL: the one given, or a `tenure serve --workers 2` started here."""
    if options.url:
        yield options.url
        return
    with tenure_service("--workers", "2") as server:
        yield server.url


def main() -> None:
    options = _arguments()
    with _served(options) as url:
        run = measure(url, tuple(options.tasks), options.runs, options.seconds, options.clients)
        print("\n".join(table(run)))
        for measure_name, target, evaluate in TARGETS:
            text, ok = evaluate(run)
            verdict = "n/a" if ok is None else ("pass" if ok else "FAIL")
            print(f"- {measure_name} (target {target}): {text}: {verdict}")


if __name__ == "__main__":
    main()
