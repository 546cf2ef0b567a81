"""Where a worker's CPU goes under acquire load: py-spy samples uvicorn workers while wrk drives
POST /v1/leases/{name}/acquire, writes a flame graph, and sorts the samples into the parts of
the request path (each sample counted once, in the first category that matches its stack)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cpu import CpuMeter, process_tree
from runners import GRACE_SECONDS, WRK, loadgen, wrk
from workloads import Measurement

PY_SPY = Path(sys.executable).parent / "py-spy"
SAMPLE_RATE = 100
# Leaves of threads that wait (py-spy's idle detection misses some): not CPU, left out.
WAITS = ("Condition.wait", "Queue.get", "Event.wait", "Connection._recv", "select", "sleep")

Stack = list[str]


def _any(*needles: str) -> Callable[[Stack], bool]:
    return lambda stack: any(needle in frame for frame in stack for needle in needles)


def _leaf(*needles: str) -> Callable[[Stack], bool]:
    return lambda stack: any(needle in stack[-1] for needle in needles)


# In order: the first that matches a sample's stack takes it.
CATEGORIES: tuple[tuple[str, Callable[[Stack], bool]], ...] = (
    (
        "sync dependencies run in the threadpool (anyio hand-off)",
        _any("run_in_threadpool", "anyio/to_thread.py", "WorkerThread.run"),
    ),
    (
        "logging (records, JSON formatting, stderr writes)",
        _any("logging/", "tenure_server/server/logs.py"),
    ),
    ("metrics (prometheus_client)", _any("prometheus_client/")),
    ("asyncpg: connection reset query on pool release", _any("Connection.reset (asyncpg")),
    ("asyncpg: pool acquire, query, result decoding", _any("asyncpg/")),
    ("response model built by the handler (LeaseOut.of etc.)", _any(".of (tenure_server/api")),
    (
        "response validation + serialization (serialize_response, JSON)",
        _any("serialize_response", "jsonable_encoder", "JSONResponse.render", "dump_json", "json/"),
    ),
    (
        "request: dependency resolution + body parsing/validation",
        _any(
            "solve_dependencies",
            "request_body_to_args",
            "Request.body",
            "Request.json",
            "_parse (tenure_server/api/express.py",
        ),
    ),
    ("response send (ASGI send chain, transport write)", _any("RequestResponseCycle.send")),
    (
        "handler, operations, repository (tenure_server)",
        _leaf("tenure_server/api/leases.py", "tenure_server/db/", "tenure_server/domain/"),
    ),
    (
        "middleware layers (own time)",
        _leaf("middleware", "api/edge.py", "_exception_handler.py"),
    ),
    (
        "routing (route matching, endpoint dispatch; the express lane's own)",
        _leaf("routing.py", "applications.py", "api/express.py"),
    ),
    ("HTTP protocol (uvicorn + httptools)", _leaf("uvicorn/")),
    ("event loop + socket I/O (uvloop, in C)", _leaf("Runner.run", "asyncio/")),
    ("other", lambda stack: True),
)


@dataclass
class Profile:
    system: str
    samples: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)
    cpu_ms_per_request: float = 0.0
    requests_per_second: float = 0.0
    svg: Path | None = None


def parse(raw: str, system: str) -> Profile:
    """Collapsed stacks (`frame;frame;… count`, root first) into a Profile."""
    profile = Profile(system)
    for line in raw.splitlines():
        text, _, count_text = line.rpartition(" ")
        if not text or not count_text.isdigit():
            continue
        stack, count = text.split(";"), int(count_text)
        if stack[-1].startswith(WAITS):
            continue
        profile.samples += count
        name = next(name for name, matches in CATEGORIES if matches(stack))
        profile.categories[name] += count
        for frame in set(stack):
            profile.inclusive[frame] += count
    return profile


def _workers(server_pid: int) -> list[int]:
    found = []
    for pid in process_tree(server_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in command:
            found.append(pid)
    return found or [server_pid]


def _py_spy(pid: int, seconds: int, output: Path, fmt: str) -> subprocess.Popen[bytes]:
    command = [
        str(PY_SPY),
        "record",
        f"--pid={pid}",
        f"--duration={seconds}",
        f"--rate={SAMPLE_RATE}",
        "--nonblocking",
        "--nolineno",
        f"--format={fmt}",
        f"--output={output}",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _busiest(workers: list[int], seconds: float) -> list[int]:
    """The workers, busiest first over `seconds` (uvicorn's workers share one listening socket,
    and keep-alive connections need not spread evenly over them)."""
    meters = {pid: CpuMeter(pid) for pid in workers}
    for meter in meters.values():
        meter.start()
    time.sleep(seconds)
    return sorted(workers, key=lambda pid: meters[pid].elapsed(), reverse=True)


def profile_acquire(
    system: str, url: str, server_pid: int, seconds: int, folder: Path, svg: Path | None
) -> Profile:
    """Sample every worker while wrk (or loadgen) runs acquire at 16 connections; the flame
    graph is of the busiest worker."""
    results: list[Measurement] = []

    def drive() -> None:
        if WRK is not None:
            results.append(wrk(url, "acquire", 16, seconds + 4, f"prof-{system}-", 11))
        else:
            results.append(loadgen(url, "acquire", 16, seconds + 4, f"prof-{system}-"))

    driver = threading.Thread(target=drive)
    driver.start()
    workers = _busiest(_workers(server_pid), 2)  # and warm
    raws = [folder / f"profile-{system}-{pid}.txt" for pid in workers]
    spies = [_py_spy(pid, seconds, raw, "raw") for pid, raw in zip(workers, raws, strict=True)]
    if svg is not None:
        spies.append(_py_spy(workers[0], seconds, svg, "flamegraph"))
    meter = CpuMeter(server_pid)
    meter.start()
    for spy in spies:
        spy.wait(timeout=seconds + GRACE_SECONDS)
    cpu = meter.elapsed()
    driver.join()
    if not all(raw.exists() for raw in raws):
        error = spies[0].stderr.read().decode() if spies[0].stderr else ""
        raise RuntimeError(f"py-spy wrote no profile: {error[-1000:]}")
    profile = parse("\n".join(raw.read_text() for raw in raws), system)
    if results:
        rate = results[0].rate
        profile.requests_per_second = rate
        profile.cpu_ms_per_request = cpu / (rate * seconds) * 1000 if rate else 0.0
    profile.svg = svg if svg is not None and svg.exists() else None
    return profile
